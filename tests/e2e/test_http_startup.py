"""``ctx serve --http`` prints, as the original's ``ctx serve mcp`` does, the Lua tools with their
routes and then the addresses (stderr; a real subprocess)."""

from __future__ import annotations

from pathlib import Path

from support.http import free_port, spawn_http
from support.paths import EXAMPLES


def test_http_startup_lines_name_the_lua_tools(config_file: Path, child_env: dict[str, str]) -> None:
    config_file.write_text(config_file.read_text(encoding="utf-8")
                           + f'\n[tools.script.echo]\npath = "{(EXAMPLES / "lua" / "echo.lua").as_posix()}"\n',
                           encoding="utf-8")
    port = free_port()
    proc = spawn_http(["--config", str(config_file)], child_env, port)
    proc.terminate()
    proc.wait(timeout=15)
    assert proc.stderr is not None
    lines = proc.stderr.read().decode().splitlines()
    proc.stderr.close()
    url = f"http://127.0.0.1:{port}"
    start = lines.index("Loaded 1 Lua tool(s):")
    assert lines[start + 1].startswith("  POST /tools/echo — Echo the given text back")
    assert lines[start + 2:start + 4] == [f"MCP server listening on {url}", f"  MCP endpoint: {url}/mcp"]
