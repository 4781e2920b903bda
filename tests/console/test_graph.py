"""The graph page's narrowing (``console/graph.py``), on the shape ``Harness.link_graph`` returns: a
source, a folder with its subfolders, notes without links hidden, and the choices the whole offers."""

from __future__ import annotations

from context_harness.console.graph import folders_of, narrowed


def note(doc: str, source: str, path: str) -> dict[str, object]:
    return {"id": doc, "title": None, "source": source, "source_id": path, "here": False}


WHOLE = {"nodes": [note("a", "s:notes", "kitchen/recipes/a.md"), note("b", "s:notes", "kitchen/b.md"),
                   note("c", "s:notes", "garden/c.md"), note("d", "s:journal", "d.md"),
                   note("e", "s:notes", "kitchenette/e.md")],
         "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "d", "to": "a"}], "note": None}


def test_folders_are_every_folder_and_its_parents() -> None:
    assert folders_of(["x/y/z.md", "top.md", "x/w.md"]) == ["x", "x/y"]


def test_the_whole_graph_counts_each_notes_links() -> None:
    whole = narrowed(WHOLE, "", "", False)
    assert {n["id"]: n["links"] for n in whole["nodes"]} == {"a": 2, "b": 2, "c": 1, "d": 1, "e": 0}
    assert whole["sources"] == ["s:journal", "s:notes"] and whole["total"] == 5
    assert whole["folders"] == ["garden", "kitchen", "kitchen/recipes", "kitchenette"]


def test_a_source_a_folder_and_no_orphans_narrow_notes_and_links() -> None:
    notes = narrowed(WHOLE, "s:notes", "", False)
    assert [n["id"] for n in notes["nodes"]] == ["a", "b", "c", "e"] and len(notes["edges"]) == 2
    kitchen = narrowed(WHOLE, "", "kitchen/", False)  # its subfolders, not kitchenette
    assert [n["id"] for n in kitchen["nodes"]] == ["a", "b"] and kitchen["edges"] == [{"from": "a", "to": "b"}]
    assert kitchen["folders"] == notes["folders"]  # the choices stay those of the whole
    linked = narrowed(WHOLE, "s:notes", "", True)
    assert [n["id"] for n in linked["nodes"]] == ["a", "b", "c"]  # e links nowhere; d's link is to another source
    assert [n["id"] for n in narrowed(WHOLE, "s:journal", "", True)["nodes"]] == []
