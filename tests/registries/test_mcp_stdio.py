"""One real MCP client over stdio: an enabled registry tool is listed and callable, and refused a
host it did not declare; a registry tool not enabled is absent."""

from __future__ import annotations

import sys

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from context_harness import config as config_mod
from context_harness.registries import service

pytestmark = pytest.mark.anyio


async def test_enabled_registry_tool_over_stdio(project, pages, child_env) -> None:
    service.set_enabled(config_mod.load_file(project.config), "tools/fetch", True)
    params = StdioServerParameters(command=sys.executable, env=child_env, cwd=str(project.folder),
                                   args=["-m", "context_harness", "--config", str(project.config), "serve"])
    with (project.folder / "stderr.log").open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"search", "fetch", "shout"} <= names
            assert "peek" not in names  # asks for http, not enabled
            done = await client.call_tool("fetch", {"url": pages.url("hello.txt")})
            assert done.structured_content["result"]["body"] == "hello from the declared host\n"
            refused = await client.call_tool("fetch", {"url": f"http://127.0.0.1:{pages.port + 1}/"})
            assert refused.is_error
            assert "is not declared in the manifest of tools/fetch" in refused.content[0].text
