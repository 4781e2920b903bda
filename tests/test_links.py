"""The link extractor: Markdown links and wikilinks, and what is not a link."""

from __future__ import annotations

from context_harness.common.links import Link, document_names, extract_links, link_key, markdown_paths


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
