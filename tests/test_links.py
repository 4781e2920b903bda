"""The link extractor: Markdown links and wikilinks, and what is not a link."""

from __future__ import annotations

import pytest

from context_harness.common.links import (
    Link,
    document_names,
    extract_links,
    link_key,
    markdown_paths,
    partial_path,
    wikilink_names,
)


def test_markdown_links_to_relative_targets_only() -> None:
    body = ("See [a](notes/a.md), [b](../b.md#intro), [c](c%20d.md?x=1), [web](https://x.org/a.md), "
            "[mail](mailto:me@x.org), [top](#top), ![img](pic.png) and [t](<spaced name.md> \"title\").")
    assert extract_links(body) == [Link("markdown", "notes/a.md"), Link("markdown", "../b.md"),
                                   Link("markdown", "c d.md"), Link("markdown", "spaced name.md")]


def test_wikilinks_with_alias_and_heading() -> None:
    body = "[[Target]] and [[Other Page|shown]] and [[Third#Heading]] and [[Target]] again, [[ ]]"
    assert extract_links(body) == [Link("wiki", "Target"), Link("wiki", "Other Page"), Link("wiki", "Third")]


def test_links_inside_code_are_skipped() -> None:
    body = "```\n[[InFence]] [x](fence.md)\n```\nuse `[[Inline]]` or `[y](inline.md)`; [[Real]] [z](real.md)\n" \
           "~~~python\n[[Tilde]]\n~~~\n"
    assert extract_links(body) == [Link("markdown", "real.md"), Link("wiki", "Real")]


def test_keys_resolve_paths_against_the_linking_folder() -> None:
    assert link_key(Link("markdown", "../b.md"), "notes/sub/a.md") == "notes/b.md"
    assert link_key(Link("markdown", "./c"), "notes/a.md") == "notes/c"
    assert link_key(Link("markdown", "/top.md"), "notes/a.md") == "top.md"
    assert link_key(Link("wiki", "My Page.md"), "x.md") == "my page"
    assert markdown_paths("notes/c") == ["notes/c", "notes/c.md"]
    assert document_names("notes/My Page.md", "Title Here") == {"notes/my page", "my page", "title here"}


def test_wikilink_names_add_every_tail_of_the_path() -> None:
    assert wikilink_names("projects/Garden-Shed/permit.md", None) == {
        "projects/garden-shed/permit", "garden-shed/permit", "permit"}
    assert partial_path("garden-shed/permit", "projects/Garden-Shed/permit.md")
    assert partial_path("projects/garden-shed/permit", "projects/garden-shed/permit.md")
    assert not partial_path("shed/permit", "projects/garden-shed/permit.md")  # whole folder names only
    assert not partial_path("permit", "projects/garden-shed/permit.md")  # no slash: a plain name


@pytest.mark.anyio
async def test_partial_path_wikilinks_resolve_both_ways(workspace) -> None:
    """``[[garden-shed/permit]]`` means projects/garden-shed/permit.md, as in an Obsidian vault; a
    folder name that only ends the same (``shed/permit``) does not, and the same stem elsewhere does
    not steal the link."""
    from context_harness.core.harness import Harness
    from context_harness.models import RelatedRequest

    workspace.write("projects/garden-shed/permit.md", "# Shed permit\n\nThe council's planning permit.\n")
    workspace.write("archive/permit.md", "# Old permit\n\nA different permit.\n")
    workspace.write("plan.md", "# Plan\n\nSee [[garden-shed/permit]], [[Garden-Shed/Permit|the permit]] "
                    "and [[shed/permit]].\n")
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
        plan = (await harness.related(RelatedRequest(id=_id(harness, "plan.md"))))
        assert [(i.source_id, i.link) for i in plan.links_to] == [("projects/garden-shed/permit.md",
                                                                   "garden-shed/permit")]
        assert [u.target for u in plan.unresolved] == ["shed/permit"]
        permit = await harness.related(RelatedRequest(id=_id(harness, "projects/garden-shed/permit.md")))
        assert [i.source_id for i in permit.linked_from] == ["plan.md"]
        other = await harness.related(RelatedRequest(id=_id(harness, "archive/permit.md")))
        assert other.linked_from == []


def _id(harness, source_id: str) -> str:
    from context_harness.store.records import document_id

    return document_id("filesystem:docs", source_id)
