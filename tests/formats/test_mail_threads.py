"""E-mail threads across ``.eml`` files: a message whose ``In-Reply-To`` names the ``Message-ID`` of
another indexed message links to it, so ``related`` shows the thread both ways (a real sync, the real
store's links, the real ``related``)."""

from __future__ import annotations

import datetime as dt

import pytest

from context_harness.core.harness import Harness
from context_harness.models import RelatedRequest
from context_harness.store.records import document_id
from support.office_files import message
from support.workspace import Workspace

UTC = dt.UTC
SOURCE = "filesystem:docs"


def doc(path: str) -> str:
    return document_id(SOURCE, path)


@pytest.mark.anyio
async def test_replies_link_to_the_messages_they_answer(workspace: Workspace) -> None:
    first = message("Boat launch", "Ann <ann@example.org>", "crew@example.org", "The boat launches at noon.",
                    when=dt.datetime(2024, 1, 1, 10, tzinfo=UTC), message_id="<launch@example.org>")
    reply = message("Re: Boat launch", "Bob <bob@example.org>", "Ann <ann@example.org>", "I will bring rope.",
                    when=dt.datetime(2024, 1, 1, 11, tzinfo=UTC), message_id="<reply@example.org>",
                    in_reply_to="<launch@example.org>")
    again = message("Re: Re: Boat launch", "Ann <ann@example.org>", "Bob <bob@example.org>", "Thanks, Bob.",
                    when=dt.datetime(2024, 1, 1, 12, tzinfo=UTC), message_id="<again@example.org>",
                    in_reply_to="<reply@example.org>")
    stray = message("Re: Elsewhere", "Cy <cy@example.org>", "Ann <ann@example.org>", "Answering a lost message.",
                    when=dt.datetime(2024, 1, 2, tzinfo=UTC), message_id="<stray@example.org>",
                    in_reply_to="<not-indexed@example.org>")
    (workspace.docs / "mail").mkdir()
    for path, msg in (("launch.eml", first), ("mail/reply.eml", reply), ("mail/again.eml", again),
                      ("stray.eml", stray)):
        (workspace.docs / path).write_bytes(msg.as_bytes())
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        middle = await h.related(RelatedRequest(id=doc("mail/reply.eml")))
        top = await h.related(RelatedRequest(id=doc("launch.eml")))
        lost = await h.related(RelatedRequest(id=doc("stray.eml")))
    assert [(i.id, i.link) for i in middle.links_to] == [(doc("launch.eml"), "launch@example.org")]
    assert [(i.id, i.link) for i in middle.linked_from] == [(doc("mail/again.eml"), "reply@example.org")]
    assert [i.id for i in top.linked_from] == [doc("mail/reply.eml")] and top.links_to == []
    assert lost.links_to == [] and lost.unresolved == []  # its parent is not indexed: no link, none listed


@pytest.mark.anyio
async def test_a_reply_synced_before_its_parent_links_once_the_parent_comes(workspace: Workspace) -> None:
    reply = message("Re: Minutes", "Bob <bob@example.org>", "Ann <ann@example.org>", "Approved.",
                    when=dt.datetime(2024, 3, 1, 11, tzinfo=UTC), message_id="<r1@example.org>",
                    in_reply_to="<m1@example.org>")
    (workspace.docs / "reply.eml").write_bytes(reply.as_bytes())
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        assert (await h.related(RelatedRequest(id=doc("reply.eml")))).links_to == []
        minutes = message("Minutes", "Ann <ann@example.org>", "board@example.org", "The minutes of March.",
                          when=dt.datetime(2024, 3, 1, 10, tzinfo=UTC), message_id="<m1@example.org>")
        (workspace.docs / "minutes.eml").write_bytes(minutes.as_bytes())
        await h.sync()
        linked = await h.related(RelatedRequest(id=doc("reply.eml")))
    assert [i.id for i in linked.links_to] == [doc("minutes.eml")]
