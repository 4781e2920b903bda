"""Secrets never leave (issue 16, battery 7): a workspace configured with distinctive secret strings
is driven down every error path that could echo one — a wrong and a missing bearer token, a git
clone failing with credentials in its URL, an embeddings endpoint that rejects the API key and
echoes it back, Lua tools failing and logging with an allowed environment variable and a config
value, an invalid config — through the CLI, ``ctx serve --http`` (REST and MCP) and ``ctx serve``
over stdio. Every byte of stdout, stderr and every payload is kept, and no secret may appear in any.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from support.http import free_port, serve_in_thread, spawn_http, stop_process
from support.workspace import KB_DOCS, write_files

pytestmark = pytest.mark.slow

SECRETS = {
    "HX_TOKEN": "tok-HX7f3a9c-bearer",  # [server] auth_token
    "HX_API_KEY": "sk-HX5d1e8b-apikey",  # [embedding] api_key
    "HX_GIT_PASS": "gitpw-HX2c4f-cred",  # a git URL's password, from the environment
    "HX_LUA_TOKEN": "lua-HX9e7d-token",  # a Lua tool's config value
    "HX_ENV_ONLY": "envonly-HX3b8a-var",  # only in [lua] env_allow, read by env.get
    "HX_BAD": "bad-HX1a2b-value",  # a value in an invalid config
}
LITERAL_PASSWORD = "literal-HX6c0d-pw"  # written into a git URL in the config itself

LEAKY_LUA = """
tool = {
  description = "Fails and logs with secrets",
  parameters = {{ name = "mode", type = "string", required = true, enum = { "env", "config", "log", "ok" } }},
}
function tool.execute(params, context)
  if params.mode == "env" then error("the token is " .. env.get("HX_ENV_ONLY")) end
  if params.mode == "config" then error("the key is " .. context.config.api_token) end
  if params.mode == "log" then
    log.error("logging " .. env.get("HX_LUA_TOKEN") .. " and " .. context.config.api_token)
    log.warn("and " .. env.get("HX_ENV_ONLY"))
  end
  return { ok = true }
end
"""


class EchoingOpenAI(ThreadingHTTPServer):
    """An OpenAI-compatible endpoint that rejects every key and, like some do, echoes it back."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Rejecting)


class _Rejecting(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def write_config(root: Path, embed_url: str) -> Path:
    closed = free_port()  # nothing listens there: the clones fail at once
    write_files(root / "docs", KB_DOCS)
    write_files(root / "tools", {"leaky.lua": LEAKY_LUA})
    cfg = root / "ctx.toml"
    cfg.write_text(f"""
[db]
path = "data/ctx.sqlite"

[embedding]
provider = "openai"
base_url = "{embed_url}"
api_key = "${{HX_API_KEY}}"
model = "text-embedding-3-small"
dims = 8

[server]
sync_on_start = true
auth_token = "${{HX_TOKEN}}"

[lua]
env_allow = ["HX_ENV_ONLY", "HX_LUA_TOKEN"]

[connectors.filesystem.docs]
root = "docs"

[connectors.git.private]
url = "http://hxuser:${{HX_GIT_PASS}}@127.0.0.1:{closed}/team/notes.git"

[connectors.git.literal]
url = "https://alice:{LITERAL_PASSWORD}@127.0.0.1:{closed}/team/wiki.git"

[tools.script.leaky]
path = "tools/leaky.lua"
api_token = "${{HX_LUA_TOKEN}}"
""", encoding="utf-8")
    return cfg


class Outputs:
    """Every output of the run, by where it came from."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def add(self, where: str, text: Any) -> str:
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False, default=str)
        self.texts[where] = self.texts.get(where, "") + text
        return text

    def leaks(self) -> list[str]:
        found = []
        for where, text in self.texts.items():
            for secret in [*SECRETS.values(), LITERAL_PASSWORD]:
                if secret in text:
                    at = text.index(secret)
                    found.append(f"{secret} in {where}: ...{text[max(0, at - 150):at + 50]!r}")
        return found


@pytest.fixture
def env(tmp_path: Path, child_env: dict[str, str]) -> dict[str, str]:
    return {**child_env, **SECRETS, "NO_COLOR": "1", "CTX_CONFIG": "", "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture
def embed_url() -> Iterator[str]:
    with serve_in_thread(EchoingOpenAI()) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"


def ctx(outputs: Outputs, env: dict[str, str], cfg: Path, *args: str, expect: int | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "context_harness", "--config", str(cfg), *args], env=env,
                          capture_output=True, text=True, timeout=120, cwd=cfg.parent)
    where = "ctx " + " ".join(args)
    outputs.add(f"{where} (stdout)", done.stdout)
    outputs.add(f"{where} (stderr)", done.stderr)
    if expect is not None:
        assert done.returncode == expect, f"{where}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_no_secret_in_any_output(tmp_path: Path, env: dict[str, str], embed_url: str) -> None:
    cfg = write_config(tmp_path, embed_url)
    outputs = Outputs()
    cli_path(outputs, env, cfg)
    http_path(outputs, env, cfg)
    anyio.run(stdio_path, outputs, env, cfg)
    bad_config(outputs, env, tmp_path)
    leaks = outputs.leaks()
    assert not leaks, "\n".join(leaks)
    assert sum(len(t) for t in outputs.texts.values()) > 5_000  # the run really said things


def cli_path(outputs: Outputs, env: dict[str, str], cfg: Path) -> None:
    text = ctx(outputs, env, cfg, "-v", "sync")
    assert "git" in text and "cannot update" in text, text  # both clones failed, and said so
    assert "***@127.0.0.1" in text, text
    assert "***@127.0.0.1" in ctx(outputs, env, cfg, "sync", "git:private")
    text = ctx(outputs, env, cfg, "-v", "embed", "pending")
    assert "rejected the API key" in text, text
    ctx(outputs, env, cfg, "search", "--mode", "semantic", "tantivy")
    ctx(outputs, env, cfg, "search", "tantivy", expect=0)
    assert "git:private" in ctx(outputs, env, cfg, "sources")
    ctx(outputs, env, cfg, "sources", "--json", expect=0)
    ctx(outputs, env, cfg, "stats")
    ctx(outputs, env, cfg, "check")
    assert "the token is ***" in ctx(outputs, env, cfg, "tool", "test", "leaky", "--param", "mode=env", expect=1)
    assert "the key is ***" in ctx(outputs, env, cfg, "tool", "test", "leaky", "--param", "mode=config", expect=1)
    assert "logging *** and ***" in ctx(outputs, env, cfg, "-v", "tool", "test", "leaky", "--param", "mode=log")


def http_path(outputs: Outputs, env: dict[str, str], cfg: Path) -> None:
    port = free_port()
    log = cfg.parent / "serve-http.stderr"
    sink = log.open("wb")
    proc = spawn_http(["--config", str(cfg)], env, port, stderr=sink)
    base = f"http://127.0.0.1:{port}"
    token = {"authorization": f"Bearer {SECRETS['HX_TOKEN']}"}
    try:
        with httpx2.Client(base_url=base, timeout=60) as http:
            failed_syncs(http, token)
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": SECRETS["HX_TOKEN"]},
                            {"authorization": f"Basic {SECRETS['HX_TOKEN']}"}):
                refused = http.get("/tools/sources", headers=headers)
                assert refused.status_code == 401
                outputs.add("REST refused", refused.text + json.dumps(dict(refused.headers)))
            for method, path, body in (
                    ("GET", "/tools/sources", None), ("POST", "/tools/search", {"query": "lua", "mode": "semantic"}),
                    ("POST", "/tools/search", {"query": "lua", "mode": "hybrid"}),
                    ("POST", "/tools/leaky", {"mode": "env"}), ("POST", "/tools/leaky", {"mode": "config"}),
                    ("POST", "/tools/leaky", {"mode": "log"}), ("GET", "/tools/list", None), ("GET", "/health", None),
                    ("POST", "/tools/get", {"id": "../../etc/passwd"})):
                response = http.request(method, path, json=body, headers=token)
                outputs.add(f"REST {method} {path}", response.text)
            assert "the token is ***" in outputs.texts["REST POST /tools/leaky"]
        anyio.run(mcp_over_http, outputs, f"{base}/mcp", token)
    finally:
        stop_process(proc)
        sink.close()
        outputs.add("ctx serve --http (stderr)", log.read_text(encoding="utf-8", errors="replace"))
    assert "logging *** and ***" in outputs.texts["ctx serve --http (stderr)"]


def failed_syncs(http: httpx2.Client, token: dict[str, str]) -> None:
    """Wait until the sync on start has failed on a git source (``sources`` then says why; the sync
    stops at the first source that fails)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        sources = http.get("/tools/sources", headers=token).json()["sources"]
        failed = [s for s in sources if s["name"].startswith("git:") and s.get("last_outcome") == "error"]
        if failed:
            assert all("***@127.0.0.1" in s["last_error"] for s in failed), failed
            return
        time.sleep(0.2)
    raise AssertionError(f"the git syncs did not fail: {sources}")


async def mcp_calls(outputs: Outputs, client: Client, where: str) -> None:
    for name, arguments in (("sources", {}), ("leaky", {"mode": "env"}), ("leaky", {"mode": "config"}),
                            ("leaky", {"mode": "log"}), ("search", {"query": "lua", "mode": "semantic"})):
        try:
            result = await client.call_tool(name, arguments)
            outputs.add(f"{where} {name}", result.model_dump(mode="json"))
        except MCPError as exc:
            outputs.add(f"{where} {name}", exc.error.model_dump(mode="json"))
    for uri in ("ctx://documents/nope", "agent://nope"):
        try:
            outputs.add(f"{where} read", (await client.read_resource(uri)).model_dump(mode="json"))
        except MCPError as exc:
            outputs.add(f"{where} read", exc.error.model_dump(mode="json"))
    outputs.add(f"{where} instructions", client.instructions or "")


async def mcp_over_http(outputs: Outputs, url: str, token: dict[str, str]) -> None:
    async with httpx2.AsyncClient(headers=token, timeout=60) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        await mcp_calls(outputs, client, "MCP over HTTP")
    assert "the token is ***" in outputs.texts["MCP over HTTP leaky"]


async def stdio_path(outputs: Outputs, env: dict[str, str], cfg: Path) -> None:
    errlog = cfg.parent / "stdio.stderr"
    with errlog.open("w", encoding="utf-8") as sink:
        params = StdioServerParameters(command=sys.executable, env=env,
                                       args=["-m", "context_harness", "--config", str(cfg), "-v", "serve"])
        async with Client(stdio_client(params, errlog=sink)) as client:
            await mcp_calls(outputs, client, "MCP over stdio")
    outputs.add("ctx serve (stderr)", errlog.read_text(encoding="utf-8"))


def bad_config(outputs: Outputs, env: dict[str, str], root: Path) -> None:
    bad = root / "bad.toml"
    bad.write_text('[server]\nmax_body_bytes = "${HX_BAD}"\nauth_token = 42\n', encoding="utf-8")
    text = ctx(outputs, env, bad, "sources", expect=1)
    assert "max_body_bytes" in text, text
    env_bad = {**env, "HX_BAD": "not-a-url://user:" + SECRETS["HX_BAD"] + "@x"}
    ctx(outputs, env_bad, bad, "search", "x", expect=1)
