"""Write-back as a new user meets it: a real MCP client over stdio asks the real server to remember
something, finds it, sees it in ``recent``, collides with the user's own edit, follows backlinks,
and a deleted note comes back with ``ctx note restore``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ResourceUpdated

from support.paths import BIN
from support.results import error_of

pytestmark = pytest.mark.anyio


def writable_workspace(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    (notes / "inbox").mkdir(parents=True)
    (notes / "projects.md").write_text("# Projects\n\nThe launch plan lives elsewhere.\n", encoding="utf-8")
    config = tmp_path / "ctx.toml"
    config.write_text(
        f'[db]\npath = "{(tmp_path / "data" / "ctx.sqlite").as_posix()}"\n[embedding]\nprovider = "disabled"\n'
        '[server]\nsync_on_start = true\nwatch = true\n'
        f'[connectors.filesystem.notes]\nroot = "{notes.as_posix()}"\nwritable = true\nwrite_globs = ["inbox/**", '
        '"*.md"]\n', encoding="utf-8")
    return config


async def test_an_assistant_remembers_edits_safely_and_links_over_stdio(tmp_path, child_env):
    config = writable_workspace(tmp_path)
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config", str(config)],
                                   env=child_env)
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"note_write", "note_edit", "note_move", "note_delete"} <= set(tools)
        assert tools["note_write"].annotations.read_only_hint is False
        assert tools["note_delete"].annotations.destructive_hint is True and tools["note_edit"].output_schema

        # "remember that the release moved to Friday"
        async with client.listen(resources_list_changed=True) as changes:
            started = time.perf_counter()
            written = (await client.call_tool("note_write", {
                "source": "notes", "path": "inbox/release.md", "title": "Release date",
                "content": "The release moved to Friday."})).structured_content
            found = (await client.call_tool("search", {"query": "release friday", "mode": "keyword"})).structured_content
            assert time.perf_counter() - started < 1.0
            with anyio.fail_after(5):
                await changes.__anext__()  # resources/list_changed: a document came
        assert found["results"][0]["id"] == written["id"] and written["action"] == "written"
        assert (tmp_path / "notes" / "inbox" / "release.md").read_text() == (
            "# Release date\n\nThe release moved to Friday.\n")
        recent = (await client.call_tool("recent", {"since": "1h"})).structured_content["changes"]
        assert (recent[0]["source_id"], recent[0]["change"]) == ("inbox/release.md", "added")

        # the user edits the file while the assistant holds the version it read
        read = (await client.call_tool("get", {"id": written["id"]})).structured_content
        note = tmp_path / "notes" / "inbox" / "release.md"
        note.write_text(note.read_text() + "Confirmed by Sam.\n", encoding="utf-8")
        clash = await client.call_tool("note_edit", {"id": written["id"], "op": "append", "text": "Venue: hall B.",
                                                     "expected_version": read["version"]})
        error = error_of(clash)
        assert error["code"] == "conflict" and read["version"] in error["message"]
        assert note.read_text().endswith("Confirmed by Sam.\n")  # the user's edit stands

        # read again, edit; a client subscribed to the note hears of the change
        uri = f"ctx://documents/{written['id']}"
        async with client.listen(resource_subscriptions=[uri]) as updates:
            await anyio.sleep(0.5)  # the watcher has seen the user's edit meanwhile
            now = (await client.call_tool("get", {"id": written["id"]})).structured_content["version"]
            edited = await client.call_tool("note_edit", {"id": written["id"], "op": "append", "text": "Venue: hall B.",
                                                          "expected_version": now})
            assert not edited.is_error, edited.content[0].text
            with anyio.fail_after(5):
                assert await updates.__anext__() == ResourceUpdated(uri=uri)
        assert note.read_text().endswith("Confirmed by Sam.\n\nVenue: hall B.\n")

        # a page that links to the note: related lists the backlink
        await client.call_tool("note_write", {"source": "notes", "path": "projects.md", "overwrite": True,
                                              "content": "# Projects\n\nSee [[Release date]].\n"})
        related = (await client.call_tool("related", {"id": written["id"]})).structured_content
        assert [(i["source_id"], i["why"]) for i in related["linked_from"]] == [("projects.md", "linked_from")]

        refused = await client.call_tool("note_write", {"source": "notes", "path": "../escape.md", "content": "x"})
        assert error_of(refused)["code"] == "bad_request" and not (tmp_path / "escape.md").exists()
        deleted = (await client.call_tool("note_delete", {"id": written["id"]})).structured_content
        assert not note.exists() and deleted["trash_id"]

    restore = subprocess.run([str(BIN / "ctx"), "note", "restore", deleted["trash_id"], "--config", str(config)],
                             capture_output=True, text=True, env=child_env, timeout=60)
    assert restore.returncode == 0, restore.stderr
    assert "Restored inbox/release.md" in restore.stdout and note.read_text().endswith("Venue: hall B.\n")
    search = subprocess.run([str(BIN / "ctx"), "search", "confirmed by sam", "--mode", "keyword", "--config",
                             str(config)], capture_output=True, text=True, env=child_env, timeout=60)
    assert "release.md" in search.stdout
