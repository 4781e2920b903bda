"""`uvx --from <checkout> context-harness`: how MCP clients launch the server before it is published."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from support.paths import REPO

pytestmark = pytest.mark.anyio
UVX = shutil.which("uvx") or str(Path(sys.executable).parent / "uvx")


@pytest.mark.slow
async def test_uvx_from_checkout_serves_stdio(tmp_path, docs, child_env):
    if not Path(UVX).exists():
        pytest.skip("uvx is not installed (it comes with the test extras: pip install -e '.[test]')")
    env = dict(child_env)
    # uv needs its cache and, on some machines, the system's CA settings and package index config.
    for key in ("UV_CACHE_DIR", "SSL_CERT_FILE", "SSL_CERT_DIR", "UV_INDEX_URL", "UV_DEFAULT_INDEX",
                "PIP_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_OFFLINE"):
        if key in os.environ:
            env[key] = os.environ[key]
    env.setdefault("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv"))
    params = StdioServerParameters(command=UVX, args=["--from", str(REPO), "context-harness", "--root", str(docs)],
                                   env=env)
    async with Client(params, mode="legacy") as client:
        assert {t.name for t in (await client.list_tools()).tools} >= {"search", "get", "sources"}
        result = await client.call_tool("sources", {})
        assert result.structured_content["sources"][0]["name"].startswith("filesystem:")
