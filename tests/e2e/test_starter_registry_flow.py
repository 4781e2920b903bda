"""The starter registry as a new user meets it (issue 32's walk-through): `ctx registry init` from this
checkout's `registry/`, `ctx registry add connectors/rss` pointed at a feed served on 127.0.0.1,
`ctx sync`, an article found through a real MCP stdio client; web-fetch enabled, fetching from its
declared host and refusing one it did not declare."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from support.cli import run_ctx
from support.http import serve_in_thread
from support.results import error_of

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]
FEEDS = REPO / "tests" / "starter_registry" / "fixtures" / "feeds"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def ok(*args: str, cwd: Path) -> str:
    done = run_ctx(*args, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def in_git_checkout() -> bool:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True)
    return done.returncode == 0 and (REPO / "registry" / "registry.toml").is_file()


@pytest.mark.skipif(not in_git_checkout(), reason="needs a git checkout with the starter registry (registry/)")
async def test_init_add_rss_sync_search_and_a_web_fetch_that_keeps_to_its_hosts(tmp_path: Path) -> None:
    www = tmp_path / "www"
    shutil.copytree(FEEDS, www)
    (www / "feed.xml").write_text((www / "rss.xml").read_text(encoding="utf-8").replace("{{BASE}}", ""),
                                  encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    with serve_in_thread(server):
        base = f"http://127.0.0.1:{server.server_address[1]}"
        project = tmp_path / "project"
        project.mkdir()
        ok("init", cwd=project)
        config = project / ".ctx" / "config.toml"
        assert "added [registries.community]" in ok("registry", "init", cwd=project)
        listed = ok("registry", "list", cwd=project)
        assert "connectors/rss" in listed and "tools/web-fetch" in listed and "off (asks for http" in listed

        ok("registry", "add", "connectors/rss", cwd=project)
        assert "enabled tools/web-fetch" in ok("registry", "enable", "tools/web-fetch", cwd=project)
        ok("registry", "add", "tools/web-fetch", cwd=project)  # its own table, to set its hosts
        text = config.read_text(encoding="utf-8")
        for key, value in (("url", f'"{base}/feed.xml"'), ("hosts", f'["127.0.0.1:{server.server_address[1]}"]')):
            start = text.index(f"# {key} = ...")
            text = text[:start] + f"{key} = {value}\n" + text[text.index("\n", start) + 1:]
        config.write_text(text + '\n[lua]\nhttp_allow = ["127.0.0.1"]\n', encoding="utf-8")
        assert "script:rss: 3 added" in ok("sync", cwd=project)

        params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config", str(config),
                                                                     "serve"])
        async with Client(params) as client:
            found = (await client.call_tool("search", {"query": "quokka census"})).structured_content["results"]
            assert (found[0]["title"], found[0]["source"]) == ("Quokka census: spring results", "script:rss")
            fetched = await client.call_tool("web-fetch", {"url": f"{base}/rss.xml"})
            assert not fetched.is_error and "Quokka census" in fetched.content[0].text
            for undeclared in (f"http://localhost:{server.server_address[1]}/rss.xml", "http://127.0.0.1:9/"):
                refused = await client.call_tool("web-fetch", {"url": undeclared})
                assert refused.is_error and "not in this tool's `hosts`" in error_of(refused)["message"]
