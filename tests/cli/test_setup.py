"""``ctx setup CLIENT``: real client config files in temporary homes, at each client's Linux, macOS
(and Windows) location; the merge keeps what is there, backs it up, refuses what it cannot read.
The last test spawns the server exactly as the written Claude Desktop config says and searches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result
from mcp import Client, StdioServerParameters

from context_harness.cli import cli
from context_harness.cli.clients import CLIENTS, server_executable, temporary_install
from context_harness.cli.setup import CLIENT_NAMES
from support.paths import BIN
from support.workspace import config_toml

SERVER = str(BIN / "context-harness")  # the one beside the interpreter running the tests
Run = Callable[..., Result]


@pytest.fixture
def run(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run(*args, platform=..., **env)``: ``ctx *args`` in process, in ``tmp_path/work``, with
    ``HOME`` the temporary home and no client location variable from the test process."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    def invoke(*args: str, platform: str = "linux", **env: str) -> Result:
        environment: dict[str, str | None] = {
            "HOME": str(home), "XDG_CONFIG_HOME": None, "APPDATA": None, "CLAUDE_CONFIG_DIR": None,
            "CTX_CONFIG": None, "CTX_SETUP_PLATFORM": platform, **env}
        return CliRunner().invoke(cli, list(args), env=environment, catch_exceptions=False)
    return invoke


def entry(config: Path, typed: bool = False) -> dict[str, Any]:
    return {**({"type": "stdio"} if typed else {}), "command": SERVER, "args": ["--config", str(config)]}


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


USER_FILES = [  # client, platform, file under the home, servers key, typed entry
    ("claude-desktop", "linux", ".config/Claude/claude_desktop_config.json", "mcpServers", False),
    ("claude-desktop", "darwin", "Library/Application Support/Claude/claude_desktop_config.json", "mcpServers", False),
    ("claude-desktop", "win32", "AppData/Roaming/Claude/claude_desktop_config.json", "mcpServers", False),
    ("claude-code", "linux", ".claude.json", "mcpServers", True),
    ("claude-code", "darwin", ".claude.json", "mcpServers", True),
    ("cursor", "linux", ".cursor/mcp.json", "mcpServers", False),
    ("cursor", "darwin", ".cursor/mcp.json", "mcpServers", False),
    ("vscode", "linux", ".config/Code/User/mcp.json", "servers", True),
    ("vscode", "darwin", "Library/Application Support/Code/User/mcp.json", "servers", True),
    ("vscode", "win32", "AppData/Roaming/Code/User/mcp.json", "servers", True),
]


@pytest.mark.parametrize(("client", "platform", "rel", "key", "typed"), USER_FILES)
def test_writes_the_user_file_at_the_clients_location(run: Run, home: Path, kb: Path, client: str, platform: str,
                                                       rel: str, key: str, typed: bool) -> None:
    result = run("setup", client, "--config", str(kb), platform=platform)
    assert result.exit_code == 0, result.output
    written = home / rel
    assert read(written) == {key: {"context-harness": entry(kb, typed)}}
    assert f"wrote {written}" in result.stdout
    assert f'+      "command": "{SERVER}",' in result.stdout  # the diff of what changed
    assert [p for p in home.rglob("*") if p.is_file()] == [written]


@pytest.mark.parametrize(("client", "env", "rel"), [
    ("claude-desktop", "XDG_CONFIG_HOME", "Claude/claude_desktop_config.json"),
    ("vscode", "XDG_CONFIG_HOME", "Code/User/mcp.json"),
    ("claude-code", "CLAUDE_CONFIG_DIR", ".claude.json"),
])
def test_follows_the_variables_that_move_a_clients_folder(run: Run, tmp_path: Path, kb: Path, client: str, env: str,
                                                          rel: str) -> None:
    moved = tmp_path / "moved"
    assert run("setup", client, "--config", str(kb), **{env: str(moved)}).exit_code == 0
    assert "context-harness" in read(moved / rel)["servers" if client == "vscode" else "mcpServers"]


def test_windows_reads_appdata(run: Run, tmp_path: Path, kb: Path) -> None:
    assert run("setup", "claude-desktop", "--config", str(kb), platform="win32", APPDATA=str(tmp_path / "roaming")
               ).exit_code == 0
    assert read(tmp_path / "roaming" / "Claude" / "claude_desktop_config.json")["mcpServers"]["context-harness"]


@pytest.mark.parametrize(("client", "rel", "key", "typed"), [
    ("claude-code", ".mcp.json", "mcpServers", True),
    ("cursor", ".cursor/mcp.json", "mcpServers", False),
    ("vscode", ".vscode/mcp.json", "servers", True),
])
def test_project_scope_writes_the_current_folders_file(run: Run, home: Path, kb: Path, client: str, rel: str, key: str,
                                                       typed: bool) -> None:
    result = run("setup", client, "--scope", "project", "--config", str(kb))
    assert result.exit_code == 0, result.output
    assert read(Path.cwd() / rel) == {key: {"context-harness": entry(kb, typed)}}
    assert list(home.iterdir()) == []


def test_claude_desktop_has_no_project_scope(run: Run, kb: Path) -> None:
    result = run("setup", "claude-desktop", "--scope", "project", "--config", str(kb))
    assert result.exit_code == 2
    assert "Claude Desktop has no project config; use --scope user" in result.stderr
    assert list(Path.cwd().iterdir()) == []


def test_merge_keeps_other_servers_settings_and_keys_and_backs_the_file_up(run: Run, home: Path, kb: Path) -> None:
    path = home / ".claude.json"
    original = {"numStartups": 41, "projects": {"/src/app": {"mcpServers": {"local": {"command": "x"}}}},
                "mcpServers": {"playwright": {"type": "stdio", "command": "npx", "args": ["@playwright/mcp"]},
                               "context-harness": {"type": "stdio", "command": "/old/context-harness",
                                                   "args": ["--config", "/old/ctx.toml"], "env": {"TOKEN": "t"}}},
                "userID": "abc"}
    path.write_text(json.dumps(original), encoding="utf-8")  # compact, as some clients write it
    before = path.read_bytes()
    result = run("setup", "claude-code", "--config", str(kb))
    assert result.exit_code == 0, result.output
    after = read(path)
    assert after["mcpServers"]["context-harness"] == {**entry(kb, typed=True), "env": {"TOKEN": "t"}}
    assert after["mcpServers"]["playwright"] == original["mcpServers"]["playwright"]
    assert {k: v for k, v in after.items() if k != "mcpServers"} == {
        k: v for k, v in original.items() if k != "mcpServers"}
    backups = list(home.glob(".claude.json.bak-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == before
    assert f"backup of the previous file: {backups[0]}" in result.stdout
    assert '-        "/old/ctx.toml"' in result.stdout and f'+        "{kb}"' in result.stdout


def test_an_http_entry_of_the_same_name_is_replaced_not_mixed(run: Run, home: Path, kb: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"mcpServers": {"context-harness": {"url": "http://127.0.0.1:7331/mcp",
                                                                   "headers": {"A": "b"}}}}), encoding="utf-8")
    assert run("setup", "cursor", "--config", str(kb)).exit_code == 0
    assert read(path)["mcpServers"]["context-harness"] == entry(kb)


def test_a_second_run_changes_nothing_and_says_so(run: Run, home: Path, kb: Path) -> None:
    assert run("setup", "vscode", "--config", str(kb)).exit_code == 0
    path = home / ".config" / "Code" / "User" / "mcp.json"
    path.write_text(json.dumps(read(path)), encoding="utf-8")  # the same content, formatted otherwise
    before = path.read_bytes(), path.stat().st_mtime_ns
    result = run("setup", "vscode", "--config", str(kb))
    assert result.exit_code == 0
    assert f"{path} already has this entry; nothing changed" in result.stdout
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert [p.name for p in path.parent.iterdir()] == ["mcp.json"]  # no backup, no temporary file


@pytest.mark.parametrize(("client", "rel", "text", "problem"), [
    ("claude-desktop", ".config/Claude/claude_desktop_config.json", '{"mcpServers": {"a": {"command": "x"},}}',
     "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 39"),
    ("vscode", ".config/Code/User/mcp.json", '{\n  // mine\n  "servers": {}\n  "inputs": []\n}',
     "is not valid JSON (comments are fine): expected ',' or '}' at line 4, column 3"),
    ("cursor", ".cursor/mcp.json", '[{"command": "x"}]', "holds a JSON array, not an object"),
    ("claude-code", ".claude.json", '{"mcpServers": ["x"]}',
     'has "mcpServers" set to a JSON array, not an object of servers'),
])
def test_a_file_it_cannot_read_is_refused_and_left_untouched(run: Run, home: Path, kb: Path, client: str, rel: str,
                                                             text: str, problem: str) -> None:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    result = run("setup", client, "--config", str(kb))
    assert result.exit_code == 1
    assert result.stderr == (f"error: {path} {problem}. `ctx setup` changed nothing: fix the file (or move it away) "
                             f"and run it again, or add the entry by hand (`ctx setup {client} --print` shows it)\n")
    assert path.read_text(encoding="utf-8") == text
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_vscode_file_with_comments_is_edited_in_place_keeping_them(run: Run, home: Path, kb: Path) -> None:
    """VS Code reads mcp.json as JSON with comments and trailing commas; until issue 49 such a file was refused."""
    path = home / ".config" / "Code" / "User" / "mcp.json"
    path.parent.mkdir(parents=True)
    text = '{\n  // my servers\n  "servers": {\n    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},\n' \
           '  },\n  "inputs": [] /* none yet */\n}\n'
    path.write_text(text, encoding="utf-8")
    result = run("setup", "vscode", "--config", str(kb))
    assert result.exit_code == 0, result.output
    new = path.read_text(encoding="utf-8")
    assert new.startswith('{\n  // my servers\n  "servers": {\n    "github": {"type": "http", "url": '
                          '"https://api.githubcopilot.com/mcp/"},\n    "context-harness": {\n')
    assert new.endswith('  },\n  "inputs": [] /* none yet */\n}\n')
    assert [p.read_text(encoding="utf-8") for p in path.parent.glob("mcp.json.bak-*")] == [text]


def test_a_path_it_cannot_use_is_an_error_naming_it(run: Run, home: Path, kb: Path) -> None:
    (home / ".cursor").write_text("not a folder", encoding="utf-8")
    result = run("setup", "cursor", "--config", str(kb))
    assert result.exit_code == 1
    assert result.stderr == f"error: {home / '.cursor' / 'mcp.json'}: cannot be read (Not a directory)\n"
    assert [p.name for p in home.iterdir()] == [".cursor"]


def test_print_shows_the_entry_and_the_change_and_writes_nothing(run: Run, home: Path, kb: Path) -> None:
    result = run("setup", "claude-desktop", "--print", "--config", str(kb), platform="darwin")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = lines.index("{")
    snippet = "\n".join(lines[start:lines.index("}", start) + 1])  # the entry, to paste by hand
    assert json.loads(snippet) == {"mcpServers": {"context-harness": entry(kb)}}
    assert "+++ " + str(home / "Library/Application Support/Claude/claude_desktop_config.json") in result.stdout
    assert result.stdout.endswith("--print: nothing written\n")
    assert list(home.iterdir()) == []

    existing = home / ".cursor" / "mcp.json"
    existing.parent.mkdir()
    existing.write_text('{"mcpServers": {"other": {"command": "y"}}}', encoding="utf-8")
    assert run("setup", "cursor", "--print", "--config", str(kb)).exit_code == 0
    assert existing.read_text(encoding="utf-8") == '{"mcpServers": {"other": {"command": "y"}}}'
    assert [p.name for p in existing.parent.iterdir()] == ["mcp.json"]


def test_name_adds_a_second_knowledge_base_beside_the_first(run: Run, home: Path, kb: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text(config_toml(), encoding="utf-8")
    assert run("setup", "cursor", "--config", str(kb)).exit_code == 0
    assert run("setup", "cursor", "--name", "work-notes", "--config", str(other)).exit_code == 0
    assert read(home / ".cursor" / "mcp.json")["mcpServers"] == {"context-harness": entry(kb),
                                                                  "work-notes": entry(other)}


def test_the_next_step_names_the_server_it_wrote(run: Run, home: Path, kb: Path) -> None:
    """The doctor line after a write checks the entry just written: with --name, that name (before,
    `ctx doctor cursor` looked for "context-harness" and found another entry, or none)."""
    named = run("setup", "cursor", "--name", "work notes", "--config", str(kb))
    assert named.exit_code == 0
    assert named.output.splitlines()[-1] == ("check it as Cursor will start it: ctx doctor cursor "
                                             "--name 'work notes'")
    plain = run("setup", "vscode", "--config", str(kb))
    assert plain.output.splitlines()[-1] == "check it as VS Code will start it: ctx doctor vscode"


# -- which config the entry names -------------------------------------------------------------------

def test_without_config_it_names_the_one_ctx_would_use(run: Run, home: Path, kb: Path) -> None:
    workspace = Path.cwd() / ".ctx"
    workspace.mkdir()
    (workspace / "config.toml").write_text(config_toml(docs_root="../docs"), encoding="utf-8")
    assert run("setup", "cursor").exit_code == 0
    assert read(home / ".cursor/mcp.json")["mcpServers"]["context-harness"]["args"] == [
        "--config", str((workspace / "config.toml").resolve())]
    assert run("setup", "cursor", CTX_CONFIG=str(kb)).exit_code == 0  # $CTX_CONFIG comes first, as for ctx
    assert read(home / ".cursor/mcp.json")["mcpServers"]["context-harness"]["args"] == ["--config", str(kb)]


def test_root_names_a_folder_instead(run: Run, home: Path, kb: Path) -> None:
    assert run("--root", str(kb.parent / "docs"), "setup", "claude-code").exit_code == 0
    docs = str((kb.parent / "docs").resolve())
    assert read(home / ".claude.json")["mcpServers"]["context-harness"]["args"] == ["--root", docs]


def test_no_config_or_a_broken_one_is_reported_and_nothing_written(run: Run, home: Path, tmp_path: Path) -> None:
    result = run("setup", "claude-desktop")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no config file found (looked at ")
    broken = tmp_path / "broken.toml"
    broken.write_text("[server]\nsync_on_strat = true\n", encoding="utf-8")
    result = run("setup", "claude-desktop", "--config", str(broken))
    assert result.exit_code == 1 and "sync_on_strat" in result.stderr
    assert list(home.iterdir()) == []


def test_a_symlinked_file_is_written_through_the_link(run: Run, home: Path, kb: Path, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {}}', encoding="utf-8")
    (home / ".claude.json").symlink_to(real)
    assert run("setup", "claude-code", "--config", str(kb)).exit_code == 0
    assert (home / ".claude.json").is_symlink()
    assert read(real)["mcpServers"]["context-harness"] == entry(kb, typed=True)


# -- which executable the entry runs ----------------------------------------------------------------

def make_script(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "context-harness"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def test_the_script_beside_the_interpreter_wins_then_path_then_python_m(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    assert server_executable() == ([SERVER], "beside the running Python")
    python = tmp_path / "venv" / "bin" / "python"
    on_path = make_script(tmp_path / "elsewhere")
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert server_executable() == ([str(on_path)], "on PATH")
    beside = make_script(python.parent)
    assert server_executable() == ([str(beside)], "beside the running Python")
    beside.unlink()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert server_executable() == ([str(python), "-m", "context_harness"],
                                   "the running Python (no context-harness script)")


def test_a_uvx_cache_environment_is_flagged_as_temporary(run: Run, kb: Path) -> None:
    assert temporary_install(["/home/u/.cache/uv/archive-v0/Xy12/bin/context-harness"])
    assert not temporary_install(["/home/u/.local/share/uv/tools/context-harness/bin/context-harness"])
    assert not temporary_install([SERVER])
    assert "uv's cache" not in run("setup", "cursor", "--print", "--config", str(kb)).stderr


def test_the_command_lists_every_client_without_importing_the_table() -> None:
    assert CLIENT_NAMES == tuple(CLIENTS)


# -- end to end: the written config starts the server, and it answers -------------------------------

@pytest.mark.anyio
async def test_the_written_claude_desktop_config_starts_a_server_that_answers(
        tmp_path: Path, config_file: Path, child_env: dict[str, str]) -> None:
    env = {**child_env, "HOME": str(tmp_path / "home"), "CTX_SETUP_PLATFORM": "linux"}
    setup = subprocess.run([str(BIN / "ctx"), "setup", "claude-desktop", "--config", str(config_file)], env=env,
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert setup.returncode == 0, setup.stderr
    written = read(Path(child_env["XDG_CONFIG_HOME"]) / "Claude" / "claude_desktop_config.json")
    server = written["mcpServers"]["context-harness"]
    assert os.path.isabs(server["command"]) and server["args"] == ["--config", str(config_file)]
    # as Claude Desktop starts it: the command and args, from another folder, with a small environment
    params = StdioServerParameters(command=server["command"], args=server["args"], env=child_env, cwd="/")
    async with Client(params) as client:
        with anyio.fail_after(60):
            while True:
                found = await client.call_tool("search", {"query": "claude desktop config"})
                if found.structured_content["results"]:
                    break
                await anyio.sleep(0.1)
    assert found.structured_content["results"][0]["source_id"] == "claude.md"
