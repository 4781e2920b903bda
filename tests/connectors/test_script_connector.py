"""A Lua connector syncs through the same pipeline as the filesystem connector."""

from __future__ import annotations

import json

import pytest

from context_harness.core.harness import Harness
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio

SCRIPT = """
connector = {name = "items"}
function connector.scan(config)
    return json.parse(fs.read("items.json"))
end
"""


async def test_lua_connector_incremental_sync_and_deletions(workspace) -> None:
    scripts = workspace.root / "scripts"
    scripts.mkdir()
    (scripts / "items.lua").write_text(SCRIPT)
    items = [{"source_id": "a", "title": "Alpha", "body": "aardvark facts", "tags": ["x"],
              "updated_at": "2026-01-02T03:04:05Z"},
             {"source_id": "b", "title": "Beta", "body": "badger facts", "updated_at": 1767225600},
             {"title": "no id, skipped", "body": "x"}]
    (scripts / "items.json").write_text(json.dumps(items))
    workspace.write_config('[connectors.script.items]\npath = "scripts/items.lua"\n')
    async with Harness.open(workspace.config()) as h:
        first = await h.sync("script:items")
        assert first.total("added") == 2 and first.sources[0].skipped_reasons == {"invalid_item": 1}
        hit = (await h.search(SearchRequest(query="aardvark", filters={"source": "script"}))).results[0]
        assert hit.source == "script:items" and hit.updated_at == "2026-01-02T03:04:05Z"
        again = await h.sync("script:items")
        assert again.total("unchanged") == 2 and again.total("added") == 0
        items[1]["body"] = "badger habits"
        (scripts / "items.json").write_text(json.dumps(items[1:2]))
        third = await h.sync("script:items")
        assert third.total("updated") == 1 and third.total("deleted") == 1
        assert (await h.search(SearchRequest(query="aardvark"))).results == []
        assert [r.title for r in (await h.search(SearchRequest(query="habits"))).results] == ["Beta"]
