"""``ctx tool list|test|init`` and ``ctx connector test|init`` as a user runs them (subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import run_ctx as ctx
from support.paths import REPO


@pytest.mark.slow
def test_tool_list_and_test(tools_config_path: Path) -> None:
    root = tools_config_path.parent
    listed = ctx("tool", "list", "--json", cwd=root)
    assert listed.returncode == 0, listed.stderr
    tools = {t["name"]: t for t in json.loads(listed.stdout)["tools"]}
    assert list(tools)[:3] == ["search", "get", "sources"]
    assert tools["echo"]["builtin"] is False and tools["echo"]["parameters"]["required"] == ["text"]
    human = ctx("tool", "list", cwd=root)
    assert "echo  [lua (" in human.stdout and "params: text*:string" in human.stdout

    ran = ctx("tool", "test", "echo", "--param", "text=hi", "--param", "repeat=2", cwd=root)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"result": {"echo": "> hi hi", "length": 5}}
    # context.search reaches the configured knowledge base (synced on the fly here: empty index is fine)
    searched = ctx("tool", "test", "modes", "--param", "mode=search", cwd=root)
    assert json.loads(searched.stdout) == {"result": {"count": 0}}



@pytest.mark.parametrize(("args", "message"), [
    (("echo", "--param", "repeat=2"), "missing required parameter 'text'"),
    (("echo", "--param", "text=x", "--param", "repeat=many"), "not a valid integer"),
    (("modes", "--param", "mode=error"), "deliberate failure"),
    (("modes", "--param", "mode=spin"), "timed out after 0.5 s"),
    (("nope",), "no [tools.script.nope]"),
])
def test_tool_test_errors_are_one_line_exit_1(tools_config_path: Path, args: tuple[str, ...], message: str) -> None:
    from click.testing import CliRunner

    from context_harness.cli import cli

    failed = CliRunner().invoke(cli, ["tool", "test", *args, "--config", str(tools_config_path)])
    assert failed.exit_code == 1, (args, failed.output)
    assert failed.stdout == ""
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


@pytest.mark.slow
def test_init_templates_run_as_generated(tmp_path: Path, api_url: str) -> None:
    made = ctx("tool", "init", "greeter", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "[tools.script.greeter]" in made.stdout and 'path = "tools/greeter.lua"' in made.stdout
    script = tmp_path / "tools" / "greeter.lua"
    original = script.read_text()
    again = ctx("tool", "init", "greeter", cwd=tmp_path)
    assert again.returncode == 1 and "already exists" in again.stderr and script.read_text() == original
    ran = ctx("tool", "test", "tools/greeter.lua", "--param", "text=lua", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["result"]["message"] == "Hello, lua"

    made = ctx("connector", "init", "notes", cwd=tmp_path)
    assert made.returncode == 0 and "[connectors.script.notes]" in made.stdout
    scanned = ctx("connector", "test", "connectors/notes.lua", cwd=tmp_path)
    assert scanned.returncode == 0, scanned.stderr
    assert scanned.stdout.splitlines()[0] == "script:notes: 1 item"
    assert "- welcome: Welcome to notes" in scanned.stdout
    assert ctx("connector", "init", "notes", cwd=tmp_path).returncode == 1
    assert ctx("tool", "init", "search", cwd=tmp_path).returncode == 1  # a built-in's name


@pytest.mark.slow
def test_connector_test_by_name(tmp_path: Path, make_tools_workspace, api_url: str) -> None:
    examples = REPO / "examples" / "lua"
    bad = tmp_path / "connectors" / "bad.lua"
    bad.parent.mkdir()
    bad.write_text('connector = {} function connector.scan() return { {source_id = "1", body = "ok"}, '
                   '{title = "no id"}, {source_id = "2"} } end')
    config_path = make_tools_workspace(tmp_path, f"""
[lua]
http_allow = ["127.0.0.1"]

[connectors.script.articles]
path = "{examples.as_posix()}/json_api_connector.lua"
url = "{api_url}/articles"

[connectors.script.bad]
path = "connectors/bad.lua"
""")
    root = config_path.parent
    shown = ctx("connector", "test", "articles", "--show", "2", cwd=root)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "script:articles: 5 items"
    assert lines[1] == "- 0: Article 0  <https://example.test/a/0>"
    assert "... and 3 more" in shown.stdout
    as_json = json.loads(ctx("connector", "test", "script:bad", "--json", cwd=root).stdout)
    assert as_json["count"] == 1 and as_json["skipped"] == {"invalid_item": 2}
    assert len(as_json["warnings"]) == 2 and "missing source_id" in as_json["warnings"][0]
    missing = ctx("connector", "test", "nope", cwd=root)
    assert missing.returncode == 1 and "no [connectors.script.nope]" in missing.stderr


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
