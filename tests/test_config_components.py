"""One missing variable breaks one thing: a connector, Lua tool or agent whose table uses an unset
``${VAR}`` is set aside and reported unhealthy with the variable's name (``sources``, ``ctx tool
list``, MCP and REST, the server log); everything else works. ``[db]``/``[server]`` keys still fail
at load, naming the key path."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx2
import pytest
from mcp import Client, MCPError

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import ConfigError, NotConfigured
from context_harness.server.http import build_app
from context_harness.server.mcp import build_server
from support.cli import run_ctx
from support.paths import EXAMPLES
from support.results import error_of
from support.workspace import config_toml, write_files

VAR = "CTX_TEST_JIRA_API_TOKEN"
ECHO = (EXAMPLES / "lua" / "echo.lua").as_posix()
CONNECTOR = """
connector = {description = "Two issues"}
function connector.scan(config)
  return {{source_id = "1", title = "One", body = "first issue"}, {source_id = "2", title = "Two", body = "second"}}
end
return connector
"""


def broken_config(root: Path) -> Path:
    """A folder connector and a Lua tool that work, and a connector, a tool and two agents that need ``VAR``."""
    write_files(root, {"docs/a.md": "# Alpha\n\nalpha text\n", "jira.lua": CONNECTOR})
    extra = f"""
[connectors.script.jira]
path = "jira.lua"
token = "Bearer ${{{VAR}}}"

[tools.script.echo]
path = "{ECHO}"

[tools.script.jira_create]
path = "{ECHO}"
token = "${{{VAR}}}"

[agents.helper]
system_prompt = "Helps."

[agents.jira-agent]
system_prompt = "Token ${{{VAR}}} and ${{CTX_TEST_OTHER_UNSET}}"

[agents.script.jira-lua]
path = "jira.lua"
token = "${{{VAR}}}"
"""
    config = root / "ctx.toml"
    config.write_text(config_toml(server="sync_on_start = false", extra=extra), encoding="utf-8")
    return config


@pytest.fixture
def unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    monkeypatch.delenv("CTX_TEST_OTHER_UNSET", raising=False)


def test_components_are_set_aside_and_named(tmp_path: Path, unset: None) -> None:
    config = config_mod.load_file(broken_config(tmp_path))
    assert [(u.kind, u.name, u.key_path, u.variables) for u in config.unavailable] == [
        ("connector", "script:jira", "connectors.script.jira", [VAR]),
        ("tool", "jira_create", "tools.script.jira_create", [VAR]),
        ("agent", "jira-agent", "agents.jira-agent", [VAR, "CTX_TEST_OTHER_UNSET"]),
        ("agent", "jira-lua", "agents.script.jira-lua", [VAR]),
    ]
    assert list(config.tools.script) == ["echo"] and list(config.connectors.script) == []
    assert set(config.agents) == {"helper", "script"} and config.agents["script"] == {}
    assert VAR in config.unavailable[0].message and "[connectors.script.jira]" in config.unavailable[0].message


def test_set_variables_and_defaults_make_components_available(tmp_path: Path, unset: None,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, "t0ken")
    monkeypatch.setenv("CTX_TEST_OTHER_UNSET", "x")
    config = config_mod.load_file(broken_config(tmp_path))
    assert config.unavailable == []
    assert config.tools.script["jira_create"].extra["token"] == "t0ken"
    assert config.connectors.script["jira"].extra["token"] == "Bearer t0ken"


@pytest.mark.parametrize(("section", "key"), [("db", "path"), ("retrieval", "rerank_api_key"), ("embedding", "api_key"),
                                              ("lua", "http_allow")])
def test_keys_outside_components_still_fail_with_the_key_path(tmp_path: Path, unset: None, section: str,
                                                              key: str) -> None:
    value = f'["${{{VAR}}}"]' if key == "http_allow" else f'"${{{VAR}}}"'
    path = tmp_path / "ctx.toml"
    path.write_text(f"[{section}]\n{key} = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        config_mod.load_file(path)
    assert f"{section}.{key}" in err.value.message and VAR in err.value.message
    assert str(path) in err.value.message


@pytest.mark.anyio
async def test_everything_else_works_and_the_broken_ones_say_why(tmp_path: Path, unset: None,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    config = config_mod.load_file(broken_config(tmp_path))
    async with Harness.open(config) as harness:
        report = await harness.sync()
        assert [s.source for s in report.sources] == ["filesystem:docs"]
        sources = {s.name: s for s in (await harness.sources()).sources}
        assert sources["filesystem:docs"].healthy and sources["filesystem:docs"].document_count == 1
        jira = sources["script:jira"]
        assert (jira.configured, jira.healthy) == (True, False) and VAR in (jira.notes or "")
        with pytest.raises(NotConfigured, match=VAR):
            await harness.sync("script:jira")

        assert "echo" in {t.name for t in harness.tools()} and "jira_create" not in {t.name for t in harness.tools()}
        with pytest.raises(NotConfigured, match=f"tool 'jira_create' is unavailable: .*{VAR}"):
            await harness.call_tool("jira_create", {"text": "x"})
        assert {a.name for a in harness.agents()} == {"helper"}

        async with Client(build_server(harness)) as client:
            called = await client.call_tool("jira_create", {"text": "x"})
            assert error_of(called)["code"] == "not_configured"
            assert VAR in error_of(called)["message"]
            assert not (await client.call_tool("echo", {"text": "x"})).is_error
            with pytest.raises(MCPError, match="CTX_TEST_OTHER_UNSET"):
                await client.get_prompt("jira-agent", {})
            missing_agent = await client.call_tool("agent_get", {"name": "jira-lua"})
            assert error_of(missing_agent)["code"] == "not_configured"

        app = build_app(harness)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            listed = (await http.get("/tools/list")).json()
            called_rest = await http.post("/tools/jira_create", json={"text": "x"})
            agent_rest = await http.post("/agents/jira-agent/prompt", json={})
            unknown_rest = await http.post("/agents/nobody/prompt", json={})
        assert listed["unavailable"][0]["name"] == "jira_create"
        assert agent_rest.status_code == 400 and "CTX_TEST_OTHER_UNSET" in agent_rest.json()["error"]["message"]
        assert unknown_rest.status_code == 404
        assert called_rest.status_code == 400 and VAR in called_rest.json()["error"]["message"]

        with caplog.at_level(logging.WARNING, logger="context_harness.core.services"):
            async with harness.serving(reload_interval=60):
                pass
    logged = [r.getMessage() for r in caplog.records if r.name == "context_harness.core.services"]
    assert any("connector script:jira is unavailable" in m and VAR in m for m in logged)
    assert any("tool jira_create is unavailable" in m for m in logged)
    assert any("agent jira-agent is unavailable" in m and "CTX_TEST_OTHER_UNSET" in m for m in logged)


def test_ctx_sources_and_tool_list_report_them(tmp_path: Path, unset: None) -> None:
    config = broken_config(tmp_path)
    synced = run_ctx("sync", "--config", str(config), cwd=tmp_path)  # the others sync; the one set aside: exit 1
    assert synced.returncode == 1 and "filesystem:docs: 1 added" in synced.stdout
    assert synced.stderr.startswith(f"error: script:jira was not synced: environment variable {VAR} not set")
    sources = run_ctx("sources", "--config", str(config), cwd=tmp_path)
    assert sources.returncode == 0, sources.stderr
    assert "filesystem:docs: 1 documents" in sources.stdout
    assert "script:jira" in sources.stdout and "failing" in sources.stdout and VAR in sources.stdout
    listed = run_ctx("tool", "list", "--config", str(config), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "echo  [lua" in listed.stdout and "jira_create  [lua; UNAVAILABLE]" in listed.stdout
    assert VAR in listed.stdout
    tested = run_ctx("tool", "test", "jira_create", "--param", "text=x", "--config", str(config), cwd=tmp_path)
    assert tested.returncode == 1 and VAR in tested.stderr
    agents = run_ctx("agent", "list", "--config", str(config), cwd=tmp_path)
    assert agents.returncode == 0, agents.stderr
    assert "helper  [toml]" in agents.stdout and "jira-agent  [UNAVAILABLE]" in agents.stdout
    assert "jira-lua  [UNAVAILABLE]" in agents.stdout
