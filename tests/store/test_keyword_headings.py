"""The keyword index's headings field: what counts as a heading, and what ``heading_boost`` does."""

from __future__ import annotations

from pathlib import Path

from context_harness.store.keyword import KeywordIndex, headings
from context_harness.store.records import IndexedDocument

MANUAL = """# Streams

Intro text.

## `stream.pipeline(source, destination)`

Connects streams.

```sh
# not a heading: a shell comment in a fence
```

### Object mode ###
"""


def doc(doc_id: str, title: str, body: str) -> IndexedDocument:
    return IndexedDocument(doc_id, title, body, "files:docs", [], None)


def test_headings_are_the_atx_headings_outside_fences_without_the_title() -> None:
    assert headings(MANUAL, "Streams") == ["`stream.pipeline(source, destination)`", "Object mode"]
    assert headings(MANUAL, "") == ["Streams", "`stream.pipeline(source, destination)`", "Object mode"]
    assert headings("#not-a-heading\n    # indented code\n", "") == []


def test_a_boosted_heading_match_outranks_a_passing_mention_and_zero_keeps_the_old_order(tmp_path: Path) -> None:
    # "pipeline" once in a body heading versus twice in the body text of a longer note.
    heading_doc = doc("h", "Streams", "# Streams\n\n## Pipeline\n\nJoins readable and writable ends together here.")
    body_doc = doc("b", "Notes", "# Notes\n\nA pipeline, and a pipeline again, in a longer note about other things.")
    plain = KeywordIndex(tmp_path / "plain")
    boosted = KeywordIndex(tmp_path / "boosted", heading_boost=2.0)
    for index in (plain, boosted):
        index.replace([], [heading_doc, body_doc])
    assert [h.doc_id for h in plain.search("pipeline", None, 10)] == ["b", "h"]
    assert [h.doc_id for h in boosted.search("pipeline", None, 10)] == ["h", "b"]
    # A quoted phrase searches the headings field too.
    assert [h.doc_id for h in boosted.search('"pipeline"', None, 10)][0] == "h"
