"""A connector's ``source_url`` is stored only with a scheme a client may safely render as a link
(``URL_SCHEMES``): a Lua script connector returning ``javascript:``, ``data:`` or ``vbscript:`` URLs,
however disguised, has them dropped at the store's boundary; its documents are stored all the same."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest

from context_harness.core.harness import Harness
from context_harness.models import SearchRequest
from context_harness.store.records import safe_source_url

pytestmark = pytest.mark.anyio

SCRIPT = """
connector = {name = "links"}
function connector.scan(config)
    return json.parse(fs.read("items.json"))
end
"""

HOSTILE = ["javascript:alert(document.cookie)", "JaVaScRiPt:alert(1)", " \x01javascript:alert(1)",
           "java\tscript:alert(1)", "java\nscript:alert(1)", "data:text/html;base64,PHNjcmlwdD4=",
           "vbscript:msgbox(1)", "blob:https://example.test/1", "chrome://settings"]
KEPT = ["https://example.test/a?b=1", "http://example.test/", "file:///home/ann/notes/a.md",
        "ssh://git@example.test/repo.git", "git@github.com:owner/repo.git", "docs/relative.md"]


@pytest.mark.parametrize("url", HOSTILE)
def test_unsafe_schemes_are_dropped(url: str) -> None:
    assert safe_source_url(url) is None


@pytest.mark.parametrize("url", KEPT)
def test_safe_schemes_and_scheme_less_urls_are_kept(url: str) -> None:
    assert safe_source_url(url) == url


async def test_a_lua_connector_cannot_store_a_javascript_url(workspace, caplog) -> None:
    scripts = workspace.root / "scripts"
    scripts.mkdir()
    (scripts / "links.lua").write_text(SCRIPT, encoding="utf-8")
    items = [{"source_id": f"bad{i}", "title": f"Bad {i}", "body": f"okapi hostile link {i}", "source_url": url}
             for i, url in enumerate(HOSTILE)]
    items += [{"source_id": f"good{i}", "title": f"Good {i}", "body": f"okapi fine link {i}", "source_url": url}
              for i, url in enumerate(KEPT)]
    (scripts / "items.json").write_text(json.dumps(items), encoding="utf-8")
    workspace.write_config('[connectors.script.links]\npath = "scripts/links.lua"\n')
    with caplog.at_level(logging.WARNING, logger="context_harness.store.documents"):
        async with Harness.open(workspace.config()) as h:
            summary = await h.sync("script:links")
            assert summary.total("added") == len(HOSTILE) + len(KEPT), "the documents themselves are stored"
            found = await h.search(SearchRequest(query="okapi", mode="keyword", limit=50))
            urls = {hit.source_id: hit.source_url for hit in found.results}
            ids = {hit.source_id: hit.id for hit in found.results}
            for i in range(len(HOSTILE)):
                assert urls[f"bad{i}"] is None
                assert (await h.get(ids[f"bad{i}"])).source_url is None
            assert [urls[f"good{i}"] for i in range(len(KEPT))] == KEPT
    conn = sqlite3.connect(workspace.root / "data" / "ctx.sqlite")
    stored = dict(conn.execute("SELECT source_id, source_url FROM documents").fetchall())
    conn.close()
    assert all(stored[f"bad{i}"] is None for i in range(len(HOSTILE)))
    assert sum("not storing its source_url" in r.getMessage() for r in caplog.records) == len(HOSTILE)
