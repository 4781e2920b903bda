"""One item never stops a source: an item that fails to load or parse, or cannot be stored, is a
named ``error`` skip and the rest of its source syncs; a scan that fails part-way syncs what it listed
and deletes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from context_harness.connectors.base import ERROR_SKIP_REASONS, Candidate, ScanReport, SourceItem
from context_harness.core.harness import Harness
from context_harness.extensions import Extensions
from context_harness.models import SearchRequest
from support.workspace import Workspace

pytestmark = pytest.mark.anyio


async def titles(h: Harness, query: str) -> list[str]:
    return sorted(r.title for r in (await h.search(SearchRequest(query=query, limit=20))).results)


class ListConnector:
    """An extension connector (the Python entry-point kind) over a list of items; an item given as an
    exception raises it from its ``load``, and ``stop_after`` makes the scan itself fail part-way."""

    type = "listed"

    def __init__(self, items: list[SourceItem | Exception], stop_after: int | None = None) -> None:
        self.name = "items"
        self.items = items
        self.stop_after = stop_after

    @property
    def label(self) -> str:
        return f"{self.type}:{self.name}"

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        for n, item in enumerate(self.items):
            if n == self.stop_after:
                raise ConnectionError("the remote API dropped the connection")
            source_id = item.source_id if isinstance(item, SourceItem) else f"bad{n}"
            yield Candidate(source_id, None, load=lambda item=item: _load(item))


def _load(item: SourceItem | Exception) -> SourceItem:
    if isinstance(item, Exception):
        raise item
    return item


def note(source_id: str, body: str = "wombat", **fields) -> SourceItem:
    return SourceItem(source_id=source_id, body=body, **{"title": source_id, **fields})


def test_error_skip_reasons_name_what_went_wrong_and_not_what_is_skipped_by_design() -> None:
    assert isinstance(ERROR_SKIP_REASONS, frozenset)
    assert {"error", "unreadable", "scan_error"} <= ERROR_SKIP_REASONS
    assert not {"symlink", "symlink_escape", "too_large", "not_a_regular_file", "needs_documents_extra",
                "binary", "not_utf8", "vanished", "duplicate_id"} & ERROR_SKIP_REASONS


async def test_a_note_whose_front_matter_holds_an_impossible_date_keeps_it_as_text(workspace: Workspace) -> None:
    """A date that is no date (2020-13-45) once made the YAML loader raise, and the note was skipped;
    the bounded loader (``formats/yamlsafe.py``) keeps it as text, so the note is indexed with the rest.
    What still cannot be read is an ``error`` skip (the next test)."""
    workspace.write("bad.md", "---\ncreated: 2020-13-45\n---\n# Bad date\n\nwombat\n")
    workspace.write("good.md", "# Good\n\nwombat\n")
    async with Harness.open(workspace.config()) as h:
        report = await h.sync()
        summary = report.sources[0]
        assert summary.added == 2 and summary.skipped_reasons == {}
        assert sorted(await titles(h, "wombat")) == ["Bad date", "Good"]


async def test_items_that_raise_on_load_or_cannot_be_stored_are_error_skips(workspace: Workspace) -> None:
    items: list[SourceItem | Exception] = [
        note("a"), RuntimeError("boom"), note("lone\udc80surrogate"), note("b", title="\ud800"),
        note("c", metadata={"when": object()}), note("d"),
    ]
    async with Harness.open(workspace.config(), Extensions(connectors=[(ListConnector(items), "test")])) as h:
        report = await h.sync("listed")
        summary = report.sources[0]
        assert summary.added == 2 and summary.skipped_reasons == {"error": 4}
        assert sorted(i.source_id for i in summary.skipped_items) == ["b", "bad1", "c", "lone\\udc80surrogate"]
        assert await titles(h, "wombat") == ["a", "d"]


async def test_a_stored_item_that_now_fails_to_load_is_kept_until_it_loads_again(workspace: Workspace) -> None:
    items: list[SourceItem | Exception] = [note("a"), note("bad1", body="platypus")]
    connector = ListConnector(items)
    async with Harness.open(workspace.config(), Extensions(connectors=[(connector, "test")])) as h:
        await h.sync("listed")
        connector.items = [note("a"), RuntimeError("the API is down for this one")]
        summary = (await h.sync("listed")).sources[0]
        assert summary.deleted == 0 and summary.skipped_reasons == {"error": 1}
        assert await titles(h, "platypus") == ["bad1"]


async def test_a_scan_that_fails_part_way_syncs_what_it_listed_and_deletes_nothing(workspace: Workspace) -> None:
    connector = ListConnector([note("a"), note("b"), note("c")])
    async with Harness.open(workspace.config(), Extensions(connectors=[(connector, "test")])) as h:
        await h.sync("listed")
        connector.items = [note("a"), note("new"), note("b"), note("c")]
        connector.stop_after = 2
        summary = (await h.sync("listed")).sources[0]
        assert summary.added == 1 and summary.deleted == 0
        assert summary.skipped_reasons == {"scan_error": 1}
        assert await titles(h, "wombat") == ["a", "b", "c", "new"]


async def test_a_scan_that_fails_before_listing_anything_still_fails_its_source(workspace: Workspace) -> None:
    connector = ListConnector([note("a")], stop_after=0)
    async with Harness.open(workspace.config(), Extensions(connectors=[(connector, "test")])) as h:
        with pytest.raises(Exception, match="dropped the connection"):
            await h.sync("listed")
