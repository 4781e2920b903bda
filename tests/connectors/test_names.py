"""Any file name the OS allows is indexed, under a reversible escaping of its bytes (``names.py``):
a Latin-1 name from an old disk, a newline, 255 bytes, names that differ only in case."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_harness.connectors.names import escape_name, unescape_name
from context_harness.core.harness import Harness
from context_harness.models import SearchRequest
from context_harness.store.records import document_id
from support.trees import LATIN1_NAME
from support.workspace import Workspace

pytestmark = pytest.mark.anyio

# A path part: any bytes but "/" and NUL, as POSIX allows.
parts = st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"/", b"_").replace(b"\x00", b"_"))


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.lists(parts, min_size=1, max_size=4))
def test_every_os_name_escapes_to_utf8_text_and_back_to_its_bytes(raw_parts: list[bytes]) -> None:
    raw = b"/".join(raw_parts)
    source_id = escape_name(os.fsdecode(raw))
    source_id.encode("utf-8")  # valid UTF-8 text: storable, searchable, JSON
    assert os.fsencode(unescape_name(source_id)) == raw


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.lists(parts, min_size=2, max_size=2, unique=True))
def test_two_different_names_never_share_an_id(pair: list[bytes]) -> None:
    assert escape_name(os.fsdecode(pair[0])) != escape_name(os.fsdecode(pair[1]))


@pytest.mark.parametrize("name", ["notes/café.md", "a b/c%20d.md", "日本語/メモ.md", "new\nline.md", "back\\slash.md",
                                  "x" * 252 + ".md", "Note.md", "\\x4.md", "\\xg1.md"])
def test_a_valid_utf8_name_is_its_own_id(name: str) -> None:
    assert escape_name(name) == name and unescape_name(name) == name


def test_a_latin1_name_and_a_name_that_only_looks_escaped_get_different_ids() -> None:
    latin1 = escape_name(os.fsdecode(LATIN1_NAME))
    typed = escape_name("caf\\xe9.md")  # a real file whose name holds a backslash, x, e, 9
    assert latin1 == "caf\\xe9.md" and typed == "caf\\x5cxe9.md"
    assert unescape_name(typed) == "caf\\xe9.md"
    assert os.fsencode(unescape_name(latin1)) == LATIN1_NAME


async def test_a_non_utf8_name_is_indexed_found_and_fetched_beside_the_rest(workspace: Workspace) -> None:
    (workspace.docs / os.fsdecode(LATIN1_NAME)).write_bytes(b"# Latin one\n\nquokka from an old disk\n")
    workspace.write("ok.md", "# Ok\n\nordinary wombat\n")
    async with Harness.open(workspace.config()) as h:
        report = await h.sync()
        assert report.total("added") == 2 and report.total("skipped") == 0
        hit = (await h.search(SearchRequest(query="quokka"))).results[0]
        assert hit.id == document_id("filesystem:docs", "caf\\xe9.md")
        doc = await h.get(hit.id)
        assert doc.source_id == "caf\\xe9.md" and "quokka" in doc.body
        assert doc.source_url is not None and doc.source_url.endswith("/docs/caf%E9.md")
        assert (workspace.docs / unescape_name(doc.source_id)).read_bytes().startswith(b"# Latin one")
        assert [r.title for r in (await h.search(SearchRequest(query="wombat"))).results] == ["Ok"]


async def test_a_watched_path_with_a_non_utf8_name_is_added_and_removed(workspace: Workspace) -> None:
    workspace.write("ok.md", "# Ok\n")
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        folder = workspace.docs / os.fsdecode(b"d\xfcr")
        folder.mkdir()
        (folder / os.fsdecode(LATIN1_NAME)).write_text("# Deep latin\n\nplatypus\n")
        added = await h.sync_paths("filesystem:docs", [os.fsdecode(b"d\xfcr/" + LATIN1_NAME)])
        assert added.added == 1
        doc = await h.get((await h.search(SearchRequest(query="platypus"))).results[0].id)
        assert doc.source_id == "d\\xfcr/caf\\xe9.md"
        (folder / os.fsdecode(LATIN1_NAME)).unlink()
        folder.rmdir()
        gone = await h.sync_paths("filesystem:docs", [os.fsdecode(b"d\xfcr")])
        assert gone.deleted == 1
        assert (await h.search(SearchRequest(query="platypus"))).results == []


async def test_newlines_255_byte_names_and_case_only_twins_are_all_indexed(workspace: Workspace) -> None:
    long_name = "é" * 126 + ".md"  # 255 bytes, NAME_MAX
    assert len(long_name.encode()) == 255
    files = {"new\nline.md": "# Newline\n\nkoala\n", long_name: "# Long\n\nkoala\n",
             "Note.md": "# Upper\n\nkoala\n", "note.md": "# Lower\n\nkoala\n"}
    for name, text in files.items():
        (workspace.docs / name).write_text(text)
    async with Harness.open(workspace.config()) as h:
        report = await h.sync()
        assert report.total("added") == 4 and report.total("skipped") == 0
        hits = (await h.search(SearchRequest(query="koala", limit=10))).results
        assert sorted(r.title for r in hits) == ["Long", "Lower", "Newline", "Upper"]
        assert len({r.id for r in hits}) == 4
        source_ids = {(await h.get(r.id)).source_id for r in hits}
        assert source_ids == set(files)


def test_the_escaping_is_documented() -> None:
    docs = Path(__file__).parents[2] / "docs"  # the docs site (the README only points at it)
    text = "\n".join(page.read_text(encoding="utf-8") for page in sorted(docs.rglob("*.md")))
    assert "caf\\xe9.md" in text and "\\x5c" in text
