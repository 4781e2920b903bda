"""A ``${VAR}`` is resolved where it is used (issue 41): an unset variable in a key only the HTTP
transport reads (``[server] auth_token``, as the HTTP how-to recommends) sets HTTP aside; the stdio
server, the CLI and every source still work with the same config, ``ctx sources`` says what is set
aside, and ``ctx serve --http`` refuses to start naming the key and the variable."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from context_harness import config as config_mod
from context_harness.errors import ConfigError
from support.cli import run_ctx
from support.workspace import E2E_DOCS, config_toml, write_files

UNSET = "CTX_TEST_TOKEN_NEVER_SET"


@pytest.fixture(autouse=True)
def _unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSET, raising=False)


def kb(tmp_path: Path, server: str) -> Path:
    write_files(tmp_path / "docs", E2E_DOCS)
    config = tmp_path / "ctx.toml"
    config.write_text(config_toml(server=server), encoding="utf-8")
    return config


def test_an_unset_variable_in_an_http_key_sets_http_aside_and_the_rest_loads(tmp_path: Path) -> None:
    path = kb(tmp_path, f'auth_token = "${{{UNSET}}}"\ncors_origins = ["${{{UNSET}}}"]\nsync_on_start = false')
    config = config_mod.load_file(path)
    assert config.server.auth_token is None and config.server.cors_origins == [] and not config.server.sync_on_start
    assert [(u.kind, u.key_path, u.variables) for u in config.unavailable] == [
        ("http", "server.auth_token", [UNSET]), ("http", "server.cors_origins", [UNSET])]
    with pytest.raises(ConfigError) as refused:
        config.require_http()
    assert "cannot serve HTTP" in refused.value.message and UNSET in refused.value.message
    assert "[server] auth_token" in refused.value.message and "[server] cors_origins" in refused.value.message


def test_set_it_and_http_takes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = kb(tmp_path, f'auth_token = "${{{UNSET}}}"')
    monkeypatch.setenv(UNSET, "s3cret-token-value")
    config = config_mod.load_file(path)
    assert config.unavailable == [] and config.server.auth_token == "s3cret-token-value"
    config.require_http()


@pytest.mark.parametrize("where", ['[embedding]\napi_key = "${VAR}"', '[server]\nmax_body_bytes = "${VAR}"'])
def test_an_unset_variable_that_everything_needs_still_fails_naming_the_key(tmp_path: Path, where: str) -> None:
    path = tmp_path / "ctx.toml"
    path.write_text('[db]\npath = "data/ctx.sqlite"\n' + where.replace("VAR", UNSET) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"(embedding.api_key|server.max_body_bytes): environment variable {UNSET}"):
        config_mod.load_file(path)


@pytest.mark.slow
@pytest.mark.anyio
async def test_stdio_serves_and_searches_while_http_refuses_naming_the_variable(
        tmp_path: Path, child_env: dict[str, str]) -> None:
    config = kb(tmp_path, f'auth_token = "${{{UNSET}}}"')
    sync = run_ctx("sync", "--config", str(config), cwd=tmp_path)
    assert sync.returncode == 0, sync.stderr
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config", str(config)],
                                   env=child_env, cwd=str(tmp_path))
    with anyio.fail_after(60):
        async with Client(params) as client:
            found = await client.call_tool("search", {"query": "claude desktop config", "mode": "keyword"})
            sources = (await client.call_tool("sources", {})).structured_content
    assert not found.is_error and found.structured_content["results"][0]["source_id"] == "claude.md"
    assert [(p["kind"], p["key_path"]) for p in sources["set_aside"]] == [("http", "server.auth_token")]

    listed = run_ctx("sources", "--config", str(config), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert f"set aside: HTTP serving — environment variable {UNSET} not set (needed by [server] auth_token" in (
        listed.stdout)

    http = run_ctx("serve", "--http", "--bind", "127.0.0.1:0", "--config", str(config), cwd=tmp_path, timeout=60)
    assert http.returncode == 1 and http.stdout == ""
    assert http.stderr.strip().startswith(f"error: {config}: cannot serve HTTP: environment variable {UNSET}")
    assert "Traceback" not in http.stderr and os.environ.get(UNSET) is None
