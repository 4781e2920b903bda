"""``note_restore`` over a real MCP client in memory: an assistant undoes its own ``note_delete``
(by the trash id it was given, or by path), and a bad call is a tool error that says what to give."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from support.results import error_of
from support.workspace import writable_notes_config

pytestmark = pytest.mark.anyio


async def test_an_assistant_undoes_its_delete(tmp_path: Path) -> None:
    async with Harness.open(writable_notes_config(tmp_path)) as harness, Client(build_server(harness)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["note_restore"].annotations.destructive_hint is False
        assert set(tools["note_restore"].input_schema["properties"]) == {"trash_id", "path"}
        written = (await client.call_tool("note_write", {"source": "notes", "path": "ideas/shed.md",
                                                         "content": "Paint the shed green."})).structured_content
        deleted = (await client.call_tool("note_delete", {"id": written["id"]})).structured_content
        note = tmp_path / "notes" / "ideas" / "shed.md"
        assert not note.exists()
        found = (await client.call_tool("search", {"query": "shed green", "mode": "keyword"})).structured_content
        assert found["results"] == []

        restored = await client.call_tool("note_restore", {"trash_id": deleted["trash_id"]})
        assert not restored.is_error
        assert restored.structured_content["action"] == "restored" and restored.structured_content["id"] == written["id"]
        assert "Restored ideas/shed.md in filesystem:notes" in restored.content[0].text
        assert note.read_text(encoding="utf-8").startswith("Paint the shed green.")
        found = (await client.call_tool("search", {"query": "shed green", "mode": "keyword"})).structured_content
        assert [hit["id"] for hit in found["results"]] == [written["id"]]

        again = await client.call_tool("note_restore", {"trash_id": deleted["trash_id"]})
        assert error_of(again)["code"] == "not_found"
        await client.call_tool("note_delete", {"id": written["id"]})
        by_path = (await client.call_tool("note_restore", {"path": "ideas/shed.md"})).structured_content
        assert by_path["action"] == "restored" and note.exists()
        await client.call_tool("note_delete", {"id": written["id"]})
        note.write_text("Someone wrote here meanwhile.\n", encoding="utf-8")
        taken = await client.call_tool("note_restore", {"path": "ideas/shed.md"})
        assert error_of(taken)["code"] == "bad_request" and "exists again" in error_of(taken)["message"]
        neither = await client.call_tool("note_restore", {})
        assert error_of(neither)["code"] == "bad_request" and "trash_id" in error_of(neither)["message"]
