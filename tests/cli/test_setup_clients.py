"""``ctx setup`` for Codex, Gemini CLI, Windsurf, Zed, Cline and LM Studio (issue 49): each client's file
at its Linux, macOS and Windows location, in its own format (Codex: TOML; Zed and Gemini CLI: JSON with
comments); a merge into a file with other servers, settings and comments keeps them all, byte for byte
outside the entry, with a backup; a file it cannot read is refused with a clear message and left as it
is; ``--print`` shows the entry and writes nothing. The real ``ctx`` in process (``CliRunner``), in a
temporary home. (tests/cli/test_client_clis.py reads what it writes with the real Gemini and Codex CLIs.)
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from context_harness.cli import cli
from context_harness.cli.file_edit import EditError, read_jsonc, set_jsonc, set_toml
from support.paths import BIN

SERVER = str(BIN / "context-harness")
Run = Callable[..., Result]
MOVERS = ("XDG_CONFIG_HOME", "APPDATA", "CLAUDE_CONFIG_DIR", "CTX_CONFIG", "CODEX_HOME", "GEMINI_CLI_HOME",
          "CLINE_MCP_SETTINGS_PATH", "CLINE_DATA_DIR")


@pytest.fixture
def run(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run(*args, platform=..., **env)``: ``ctx *args`` in process, in ``tmp_path/work``, with ``HOME``
    the temporary home and none of the variables that move a client's folder."""
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")

    def invoke(*args: str, platform: str = "linux", **env: str) -> Result:
        environment: dict[str, str | None] = {**dict.fromkeys(MOVERS), "HOME": str(home),
                                              "CTX_SETUP_PLATFORM": platform, **env}
        return CliRunner().invoke(cli, list(args), env=environment, catch_exceptions=False)
    return invoke


def entry(config: Path) -> dict[str, Any]:
    return {"command": SERVER, "args": ["--config", str(config)]}


def load(path: Path) -> Any:
    """A client file's data, read as the client does: TOML, or JSON with comments."""
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if path.suffix == ".toml" else read_jsonc(text)[0]


USER_FILES = [  # client, platform, file under the home, servers key
    ("codex", "linux", ".codex/config.toml", "mcp_servers"),
    ("codex", "darwin", ".codex/config.toml", "mcp_servers"),
    ("codex", "win32", ".codex/config.toml", "mcp_servers"),
    ("gemini", "linux", ".gemini/settings.json", "mcpServers"),
    ("gemini", "win32", ".gemini/settings.json", "mcpServers"),
    ("windsurf", "linux", ".codeium/windsurf/mcp_config.json", "mcpServers"),
    ("windsurf", "darwin", ".codeium/windsurf/mcp_config.json", "mcpServers"),
    ("zed", "linux", ".config/zed/settings.json", "context_servers"),
    ("zed", "darwin", ".config/zed/settings.json", "context_servers"),  # not Library/Application Support
    ("zed", "win32", "AppData/Roaming/Zed/settings.json", "context_servers"),
    ("cline", "linux", ".cline/data/settings/cline_mcp_settings.json", "mcpServers"),
    ("cline", "win32", ".cline/data/settings/cline_mcp_settings.json", "mcpServers"),
    ("lm-studio", "linux", ".lmstudio/mcp.json", "mcpServers"),
    ("lm-studio", "darwin", ".lmstudio/mcp.json", "mcpServers"),
]


@pytest.mark.parametrize(("client", "platform", "rel", "key"), USER_FILES)
def test_writes_the_user_file_at_the_clients_location(run: Run, home: Path, kb: Path, client: str, platform: str,
                                                       rel: str, key: str) -> None:
    result = run("setup", client, "--config", str(kb), platform=platform)
    assert result.exit_code == 0, result.output
    written = home / rel
    assert load(written) == {key: {"context-harness": entry(kb)}}
    assert f"wrote {written}" in result.stdout
    assert [p for p in home.rglob("*") if p.is_file()] == [written]
    again = run("setup", client, "--config", str(kb), platform=platform)
    assert f"{written} already has this entry; nothing changed" in again.stdout


@pytest.mark.parametrize(("client", "env", "rel"), [
    ("codex", "CODEX_HOME", "config.toml"),
    ("gemini", "GEMINI_CLI_HOME", ".gemini/settings.json"),
    ("zed", "XDG_CONFIG_HOME", "zed/settings.json"),
    ("cline", "CLINE_DATA_DIR", "settings/cline_mcp_settings.json"),
    ("cline", "CLINE_MCP_SETTINGS_PATH", ""),
])
def test_follows_the_variables_that_move_a_clients_file(run: Run, home: Path, tmp_path: Path, kb: Path, client: str,
                                                        env: str, rel: str) -> None:
    moved = tmp_path / "moved" / ("mcp.json" if not rel else "")
    result = run("setup", client, "--config", str(kb), **{env: str(moved)})
    assert result.exit_code == 0, result.output
    path = moved / rel if rel else moved
    assert "context-harness" in load(path)["mcp_servers" if client == "codex" else
                                           "context_servers" if client == "zed" else "mcpServers"]
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(("client", "rel", "key"), [
    ("codex", ".codex/config.toml", "mcp_servers"),
    ("gemini", ".gemini/settings.json", "mcpServers"),
    ("zed", ".zed/settings.json", "context_servers"),
])
def test_project_scope_writes_the_current_folders_file(run: Run, home: Path, kb: Path, client: str, rel: str,
                                                       key: str) -> None:
    result = run("setup", client, "--scope", "project", "--config", str(kb))
    assert result.exit_code == 0, result.output
    assert load(Path.cwd() / rel) == {key: {"context-harness": entry(kb)}}
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(("client", "title"), [("windsurf", "Windsurf"), ("cline", "Cline"),
                                               ("lm-studio", "LM Studio")])
def test_clients_without_a_project_file_refuse_project_scope(run: Run, kb: Path, client: str, title: str) -> None:
    result = run("setup", client, "--scope", "project", "--config", str(kb))
    assert result.exit_code == 2
    assert f"{title} has no project config; use --scope user" in result.stderr
    assert list(Path.cwd().iterdir()) == []


@pytest.mark.parametrize("client", ["codex", "gemini", "windsurf", "zed", "cline", "lm-studio"])
def test_print_shows_the_entry_in_the_clients_format_and_writes_nothing(run: Run, home: Path, kb: Path,
                                                                        client: str) -> None:
    result = run("setup", client, "--print", "--config", str(kb))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    if client == "codex":
        start = lines.index("[mcp_servers.context-harness]")
        assert tomllib.loads("\n".join(lines[start:start + 3])) == {"mcp_servers": {"context-harness": entry(kb)}}
    else:
        start = lines.index("{")
        key = "context_servers" if client == "zed" else "mcpServers"
        assert json.loads("\n".join(lines[start:lines.index("}", start) + 1])) == {key: {"context-harness": entry(kb)}}
    assert result.stdout.endswith("--print: nothing written\n")
    assert list(home.iterdir()) == []


# -- merging into the user's own file ---------------------------------------------------------------

ZED = """// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{
  "theme": "One Dark", // the dark one
  /* servers I run */
  "context_servers": {
    "github": {"command": "github-mcp", "args": [], "env": {"TOKEN": "t"}}, // mine
  },
  "ui_font_size": 16,
}
"""

GEMINI = """{
  // my Gemini CLI settings
  "general": {"vimMode": true},
  "mcpServers": {
    "playwright": {"command": "npx", "args": ["@playwright/mcp@latest"]}
  }
}
"""

CODEX = """# my Codex settings
model = "gpt-5"  # the default model

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"  # remote

[profiles.fast]
model = "o4-mini"
"""


@pytest.mark.parametrize(("client", "rel", "text", "other"), [
    ("zed", ".config/zed/settings.json", ZED, "github"),
    ("gemini", ".gemini/settings.json", GEMINI, "playwright"),
    ("codex", ".codex/config.toml", CODEX, "figma"),
])
def test_a_merge_keeps_every_comment_and_line_of_the_users_file_and_backs_it_up(
        run: Run, home: Path, kb: Path, client: str, rel: str, text: str, other: str) -> None:
    path = home / rel
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    before = load(path)
    result = run("setup", client, "--config", str(kb))
    assert result.exit_code == 0, result.output
    new = path.read_text(encoding="utf-8")
    kept = new.splitlines()
    for line in text.splitlines():  # every line of the user's file is still there, in order (a comma may end it)
        found = line if line in kept else line + ","
        assert found in kept, line
        kept = kept[kept.index(found) + 1:]
    key = {"zed": "context_servers", "gemini": "mcpServers", "codex": "mcp_servers"}[client]
    after = load(path)
    assert after[key] == {**before[key], "context-harness": entry(kb)}
    assert {k: v for k, v in after.items() if k != key} == {k: v for k, v in before.items() if k != key}
    assert after[key][other] == before[key][other]
    backups = list(path.parent.glob(f"{path.name}.bak-*"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == text
    assert f"backup of the previous file: {backups[0]}" in result.stdout
    diff = result.stdout.splitlines()  # of the text, not of a reformatted file: only a comma may change a line
    removed = [line[1:] for line in diff if line.startswith("-") and not line.startswith("---")]
    assert all(f"+{line}," in diff for line in removed), removed


def test_an_existing_entry_is_replaced_in_place_keeping_its_other_keys_and_comments(run: Run, home: Path,
                                                                                   kb: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('[mcp_servers.context-harness]\ncommand = "/old/context-harness"  # the old venv\n'
                    'args = ["--config", "/old.toml"]\nurl = "http://127.0.0.1:7331/mcp"\n'
                    'startup_timeout_sec = 30  # slow disk\n\n[tui]\nnotifications = true\n', encoding="utf-8")
    assert run("setup", "codex", "--config", str(kb)).exit_code == 0
    text = path.read_text(encoding="utf-8")
    assert tomllib.loads(text) == {"mcp_servers": {"context-harness": {**entry(kb), "startup_timeout_sec": 30}},
                                   "tui": {"notifications": True}}
    assert "startup_timeout_sec = 30  # slow disk\n" in text and "url" not in text  # another transport's key goes

    zed = home / ".config" / "zed" / "settings.json"
    zed.parent.mkdir(parents=True)
    zed.write_text('{\n  "context_servers": {\n    // ours\n    "context-harness": {"command": "/old", "env": '
                   '{"A": "b"}},\n  },\n}\n', encoding="utf-8")
    assert run("setup", "zed", "--config", str(kb)).exit_code == 0
    assert load(zed) == {"context_servers": {"context-harness": {**entry(kb), "env": {"A": "b"}}}}
    assert "    // ours\n" in zed.read_text(encoding="utf-8")


@pytest.mark.parametrize("client", ["windsurf", "cline", "lm-studio"])
def test_a_json_file_keeps_other_servers_and_keys(run: Run, home: Path, kb: Path, client: str) -> None:
    rel = {"windsurf": ".codeium/windsurf/mcp_config.json", "cline": ".cline/data/settings/cline_mcp_settings.json",
           "lm-studio": ".lmstudio/mcp.json"}[client]
    path = home / rel
    path.parent.mkdir(parents=True)
    original = {"mcpServers": {"github": {"command": "docker", "args": ["run", "-i"], "disabled": False,
                                          "alwaysAllow": ["search"]},
                               "context-harness": {"serverUrl": "http://127.0.0.1:7331/mcp", "disabled": True}},
                "theme": "dark"}
    path.write_text(json.dumps(original), encoding="utf-8")
    result = run("setup", client, "--config", str(kb))
    assert result.exit_code == 0, result.output
    assert load(path) == {"mcpServers": {"github": original["mcpServers"]["github"],
                                         "context-harness": {**entry(kb), "disabled": True}},
                          "theme": "dark"}  # the HTTP transport replaced, the user's "disabled" kept
    assert len(list(path.parent.glob(f"{path.name}.bak-*"))) == 1


@pytest.mark.parametrize(("client", "rel", "text", "problem"), [
    ("zed", ".config/zed/settings.json", '{\n  "theme": "One Dark",\n  /* unfinished\n}',
     "is not valid JSON (comments are fine): a /* comment that never ends at line 3, column 3"),
    ("zed", ".config/zed/settings.json", '{"context_servers": ["x"]}',
     'has "context_servers" set to a JSON array, not an object of servers'),
    ("gemini", ".gemini/settings.json", '{\n  // mine\n  "general": {}\n  "mcpServers": {}\n}',
     "is not valid JSON (comments are fine): expected ',' or '}' at line 4, column 3"),
    ("gemini", ".gemini/settings.json", '["x"]', "holds a JSON array, not an object"),
    ("codex", ".codex/config.toml", 'model = "gpt-5"\n[mcp_servers.x\ncommand = "y"\n',
     "is not valid TOML: "),
    ("codex", ".codex/config.toml", "mcp_servers = 3\n",
     'has "mcp_servers" set to a TOML value, not an object of servers'),
    ("windsurf", ".codeium/windsurf/mcp_config.json", '{"mcpServers": {"a": 1},}',
     "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 25"),
    ("lm-studio", ".lmstudio/mcp.json", '{"mcpServers": "none"}',
     'has "mcpServers" set to a JSON string, not an object of servers'),
    ("cline", ".cline/data/settings/cline_mcp_settings.json", "{\n  // a comment\n}",
     "is not valid JSON: Expecting property name enclosed in double quotes at line 2, column 3"),
])
def test_a_file_it_cannot_read_is_refused_and_left_untouched(run: Run, home: Path, kb: Path, client: str, rel: str,
                                                             text: str, problem: str) -> None:
    path = home / rel
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    result = run("setup", client, "--config", str(kb))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {path} {problem}"), result.stderr
    assert result.stderr.endswith("`ctx setup` changed nothing: fix the file (or move it away) and run it again, or "
                                  f"add the entry by hand (`ctx setup {client} --print` shows it)\n")
    assert path.read_text(encoding="utf-8") == text
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no backup, no temporary file


# -- the JSON-with-comments edit itself --------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("{}", '{\n  "s": {\n    "n": 1\n  }\n}'),
    ('{\n    "a": 1 // last\n}\n', '{\n    "a": 1, // last\n    "s": {\n      "n": 1\n    }\n}\n'),
    ('{"a": 1, "s": {}}', '{"a": 1, "s": {\n  "n": 1\n}}'),
    ('{"s": {"n": 0, /* old */ "m": 2}}', '{"s": {"n": 1, /* old */ "m": 2}}'),
    ('{\n\t"s": {\n\t\t"m": 2,\n\t}\n}', '{\n\t"s": {\n\t\t"m": 2,\n\t\t"n": 1\n\t}\n}'),
    ('{\r\n  "a": 1 // x\r\n}\r\n', '{\r\n  "a": 1, // x\r\n  "s": {\r\n    "n": 1\r\n  }\r\n}\r\n'),  # Windows
])
def test_jsonc_edits_touch_only_the_entry(text: str, expected: str) -> None:
    data = read_jsonc(text)[0]
    after = {**data, "s": {**data.get("s", {}), "n": 1}}
    assert set_jsonc(text, "s", "n", 1, after) == expected


@pytest.mark.parametrize(("text", "message"), [
    ('{"a": [' + "[" * 300 + "]" * 300 + "]}", "nested more than 256 levels deep at line 1, column 263"),
    ('{"a": "x\ny"}', "a string that is not closed, or holds a control character at line 1, column 7"),
    ('{"a": NaN}', "expected a value at line 1, column 7"),
    ('{"a": 1} {}', "more text after the value at line 1, column 10"),
    ("", "the text ends where a value was expected at line 1, column 1"),
])
def test_jsonc_refuses_what_it_cannot_read(text: str, message: str) -> None:
    with pytest.raises(EditError) as caught:
        read_jsonc(text)
    assert str(caught.value) == message


json_values = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                        max_size=3),
                           max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(data=st.dictionaries(st.text(max_size=6), json_values, max_size=4),
       servers=st.none() | st.dictionaries(st.text(max_size=6), json_values, max_size=3),
       indent=st.sampled_from([None, 2, 4, "\t"]), comments=st.lists(st.integers(0, 10**6), max_size=4),
       name=st.text(min_size=1, max_size=8))
def test_jsonc_edits_keep_every_comment_and_read_back_as_meant(data: dict[str, Any], servers: dict[str, Any] | None,
                                                               indent: Any, comments: list[int], name: str) -> None:
    """Any object, laid out any way, with comments at any places between tokens: the edit keeps them all."""
    document = {**data, **({"s": servers} if servers is not None else {})}
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    gaps = [i for i, c in enumerate(text) if c in ",:{[" and not _in_string(text, i)]
    marks = sorted({gaps[n % len(gaps)] for n in comments}) if gaps else []
    for n, at in enumerate(reversed(marks)):
        text = f"{text[:at + 1]} /* c{n} */ // d{n}\n{text[at + 1:]}"
    entry = {"command": "/bin/ctx", "args": ["--config", "/kb.toml"]}
    after = {**document, "s": {**(servers or {}), name: entry}}
    new = set_jsonc(text, "s", name, entry, after)
    assert read_jsonc(new)[0] == after
    for n in range(len(marks)):
        assert f"/* c{n} */ // d{n}\n" in new


def _in_string(text: str, index: int) -> bool:
    """Whether ``text[index]`` lies inside a JSON string."""
    inside, escaped = False, False
    for char in text[:index]:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = inside
        elif char == '"':
            inside = not inside
    return inside


@pytest.mark.parametrize(("text", "expected"), [
    ("", '[mcp_servers.k]\ncommand = "/a"\nargs = ["b"]\n'),
    ("# c\r\nmodel = \"x\"\r\n", '# c\r\nmodel = "x"\r\n\r\n[mcp_servers.k]\r\ncommand = "/a"\r\nargs = ["b"]\r\n'),
    ('[mcp_servers.o]\ncommand = "z"\n\n[tui]\nx = 1\n',
     '[mcp_servers.o]\ncommand = "z"\n\n[mcp_servers.k]\ncommand = "/a"\nargs = ["b"]\n\n[tui]\nx = 1\n'),
])
def test_toml_edits_add_the_table_in_the_files_own_line_endings(text: str, expected: str) -> None:
    entry = {"command": "/a", "args": ["b"]}
    after = tomllib.loads(text)
    after.setdefault("mcp_servers", {})["k"] = entry
    assert set_toml(text, "mcp_servers", "k", entry, frozenset(), after) == expected


def test_lm_studio_follows_its_home_pointer_then_an_older_installs_home(run: Run, home: Path, tmp_path: Path,
                                                                          kb: Path) -> None:
    legacy = home / ".cache" / "lm-studio"  # where LM Studio installs before ~/.lmstudio keep their home
    legacy.mkdir(parents=True)
    assert run("setup", "lm-studio", "--config", str(kb)).exit_code == 0
    assert load(legacy / "mcp.json") == {"mcpServers": {"context-harness": entry(kb)}}
    elsewhere = tmp_path / "models-disk" / "lmstudio"
    (home / ".lmstudio-home-pointer").write_text(f"{elsewhere}\n", encoding="utf-8")  # as LM Studio writes it
    assert run("setup", "lm-studio", "--config", str(kb)).exit_code == 0
    assert load(elsewhere / "mcp.json") == {"mcpServers": {"context-harness": entry(kb)}}
