"""Tags given to note_write are the document's tags whatever ``front_matter`` says: found by the
``tags`` filter at once and after the index is rebuilt from the files alone; note_edit keeps them
where the reader finds them, and appends a new paragraph. A user's own "Tags:" line elsewhere is prose."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import BadRequest
from context_harness.formats.markdown import tags_line
from context_harness.models import NoteEditRequest, NoteWriteRequest, SearchFilters, SearchRequest
from context_harness.store.records import document_id

pytestmark = pytest.mark.anyio


def _config(tmp_path: Path, front_matter: bool = False) -> config_mod.Config:
    (tmp_path / "notes").mkdir(exist_ok=True)
    (tmp_path / "ctx.toml").write_text(
        '[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n[server]\nsync_on_start = false\n'
        f'[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\nfront_matter = {str(front_matter).lower()}\n',
        encoding="utf-8")
    return config_mod.load(tmp_path / "ctx.toml")


async def tagged(harness: Harness, *tags: str, query: str = "event loop") -> list[str]:
    request = SearchRequest(query=query, mode="keyword", filters=SearchFilters(tags=list(tags)))
    return [r.source_id for r in (await harness.search(request)).results]


@pytest.mark.parametrize("front_matter", [False, True])
async def test_written_tags_are_searchable_at_once_and_after_a_rebuild_from_the_files(
        tmp_path: Path, front_matter: bool) -> None:
    config = _config(tmp_path, front_matter)
    async with Harness.open(config) as harness:
        await harness.note_write(NoteWriteRequest(source="notes", path="async.md", title="Event loops",
                                                  content="The event loop runs one task at a time.",
                                                  tags=["asyncio", "Python internals"]))
        await harness.note_write(NoteWriteRequest(source="notes", path="plain.md", content="Another event loop."))
        await harness.note_write(NoteWriteRequest(source="notes", path="only.md", tags=["asyncio"],
                                                  content="No title; an event loop all the same."))
        assert sorted(await tagged(harness, "asyncio")) == ["async.md", "only.md"]
        assert await tagged(harness, "python internals") == ["async.md"]
        assert (await harness.get((await harness.search(SearchRequest(query="runs one task", mode="keyword")))
                                  .results[0].id)).title == "Event loops"
    text = (tmp_path / "notes" / "async.md").read_text(encoding="utf-8")
    if front_matter:
        assert text.startswith('---\ntitle: "Event loops"\ntags: ["asyncio", "Python internals"]\n---\n')
    else:
        assert text == "# Event loops\n\nTags: asyncio, Python internals\n\nThe event loop runs one task at a time.\n"
    shutil.rmtree(tmp_path / "data")  # the index is rebuilt from the files alone
    async with Harness.open(config) as harness:
        await harness.sync("all", full=True)
        assert sorted(await tagged(harness, "asyncio")) == ["async.md", "only.md"]
        assert await tagged(harness, "Python internals") == ["async.md"]


async def test_a_users_tags_line_counts_only_where_note_write_puts_it(tmp_path: Path) -> None:
    notes = {
        "first.md": "Tags: garden, shed\n\nA shed plan for the event loop garden.\n",
        "titled.md": "# Shed\n\nTags: garden\n\nEvent loop in the shed.\n",
        "prose.md": "# Shed\n\nWe talked about it.\nTags: garden are what we lack.\n\nEvent loop prose.\n",
        "later.md": "# Shed\n\nSome words on the event loop.\n\nTags: garden\n\nmore\n",
        "glued.md": "# Shed\n\nTags: garden\nthe event loop goes on in this line\n",
        "code.md": "```\nTags: garden\n\n```\nevent loop\n",
    }
    for name, text in notes.items():
        (tmp_path / "notes").mkdir(exist_ok=True)
        (tmp_path / "notes" / name).write_text(text, encoding="utf-8")
    async with Harness.open(_config(tmp_path)) as harness:
        await harness.sync("all")
        assert sorted(await tagged(harness, "garden")) == ["first.md", "titled.md"]
        assert await tagged(harness, "shed") == ["first.md"]


def test_the_tags_line_reader() -> None:
    assert tags_line("Tags: a, #b , a\n\nbody") == (["a", "b"], len("Tags: a, #b , a\n\n"))
    assert tags_line("# T\r\n\r\nTags: a\r\n\r\nbody")[0] == ["a"]
    assert tags_line("# T\n\nTags: a") == (["a"], 12)
    assert tags_line("# T\nTags: a\n\n") == ([], 0)  # not the writer's shape
    assert tags_line("Tags: " + "x" * 7000 + "\n\n") == ([], 0)  # longer than 50 tags of 100 characters


async def test_edits_keep_the_tags_line_and_append_a_new_paragraph(tmp_path: Path) -> None:
    async with Harness.open(_config(tmp_path)) as harness:
        note = await harness.note_write(NoteWriteRequest(source="notes", path="n.md", title="Plan", tags=["asyncio"],
                                                         content="The event loop.\n\n## Later\nold"))
        path = tmp_path / "notes" / "n.md"

        async def edit(**change: object) -> None:
            version = (await harness.get(note.id)).version
            await harness.note_edit(NoteEditRequest(id=note.id, expected_version=str(version), **change))

        await edit(op="append", text="Appended line.")
        assert path.read_text() == "# Plan\n\nTags: asyncio\n\nThe event loop.\n\n## Later\nold\n\nAppended line.\n"
        await edit(op="append", text="Second.\n\n")
        await edit(op="append", text="Third.")
        assert path.read_text().endswith("Appended line.\n\nSecond.\n\nThird.\n")
        await edit(op="prepend", text="First of all.")
        assert path.read_text().startswith("# Plan\n\nTags: asyncio\n\nFirst of all.\nThe event loop.\n")
        assert await tagged(harness, "asyncio") == ["n.md"]
        await edit(op="replace_section", heading="Plan", text="All new.")
        assert path.read_text() == "# Plan\n\nTags: asyncio\n\nAll new.\n"
        assert await tagged(harness, "asyncio", query="all new") == ["n.md"]


async def test_append_to_a_note_without_a_final_newline_or_empty(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "bare.md").write_text("no newline at the end", encoding="utf-8")
    (tmp_path / "notes" / "blank.md").write_text("ends blank\n\n", encoding="utf-8")
    async with Harness.open(_config(tmp_path)) as harness:
        await harness.sync("all")
        for name, want in (("bare.md", "no newline at the end\n\nmore\n"), ("blank.md", "ends blank\n\nmore\n")):
            doc = await harness.get(document_id("filesystem:notes", name))
            await harness.note_edit(NoteEditRequest(id=doc.id, op="append", text="more",
                                                    expected_version=str(doc.version)))
            assert (tmp_path / "notes" / name).read_text() == want


async def test_a_tag_the_tags_line_cannot_hold_is_refused(tmp_path: Path) -> None:
    async with Harness.open(_config(tmp_path)) as harness:
        with pytest.raises(BadRequest, match="holds a comma; give each tag as its own item"):
            await harness.note_write(NoteWriteRequest(source="notes", path="c.md", content="x", tags=["a,b"]))
        with pytest.raises(BadRequest, match="control character"):
            await harness.note_write(NoteWriteRequest(source="notes", path="c.md", content="x", tags=["a\x00"]))
        await harness.note_write(NoteWriteRequest(source="notes", path="c.md", content="event loop",
                                                  title="Two\nlines", tags=["  spaced\n out "]))
        assert (tmp_path / "notes" / "c.md").read_text().startswith("# Two lines\n\nTags: spaced out\n\n")
        assert await tagged(harness, "spaced out") == ["c.md"]
    assert not (tmp_path / "notes" / "c.md.tmp").exists()


async def test_front_matter_reads_back_the_title_and_tags_as_given(tmp_path: Path) -> None:
    async with Harness.open(_config(tmp_path, front_matter=True)) as harness:
        out = await harness.note_write(NoteWriteRequest(source="notes", path="fm.md", content="event loop",
                                                        title='C:\\notes "quoted" it\'s 🎉', tags=["it's", "a\\b"]))
        doc = await harness.get(out.id)
        assert doc.title == 'C:\\notes "quoted" it\'s 🎉'
        assert await tagged(harness, "a\\b") == ["fm.md"] and await tagged(harness, "it's") == ["fm.md"]


async def test_over_mcp_note_write_tags_are_found_by_search_s_tags_filter_at_once(tmp_path: Path) -> None:
    from mcp import Client

    from context_harness.server.mcp import build_server

    async with Harness.open(_config(tmp_path)) as harness, Client(build_server(harness)) as client:
        written = await client.call_tool("note_write", {"source": "notes", "path": "inbox/loop.md", "title": "Loops",
                                                        "tags": ["asyncio"], "content": "The event loop."})
        assert not written.is_error
        found = await client.call_tool("search", {"query": "event loop", "filters": {"tags": ["asyncio"]}})
        results = found.structured_content["results"]
        assert [r["id"] for r in results] == [written.structured_content["id"]]
        assert set(results[0]) >= {"id", "score", "title", "source", "source_id", "updated_at", "snippet", "source_url"}
