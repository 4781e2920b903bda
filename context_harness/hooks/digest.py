"""The context ``ctx hook session-start`` hands a new session: Markdown within ``[hooks] budget_tokens``.

In order, each part filling what the parts before it left of the budget: the notes the user pinned
(tag ``[hooks] pinned_tag``), this project's last session notes (tag ``project:SLUG`` in the inbox),
documents matching the project's names (keyword search), and what changed in the last
``[hooks] recent_days`` days. Tokens are estimated as the chunker estimates them
(``common.text.estimate_tokens``); an item that does not fit is left out, and the digest ends by
counting what was.

Reads only: SQLite and the keyword index, never the vectors or the model, so it answers in a few
milliseconds on a 10,000-note workspace (``benchmarks/hooks.py``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from context_harness.common import timestamps
from context_harness.common.text import estimate_tokens
from context_harness.hooks.project import Project

if TYPE_CHECKING:
    from context_harness.hooks.settings import HookSettings
    from context_harness.store.backend import DocumentStorage, KeywordRanking

EXCERPT_CHARS = 280  # of a pinned note or a session note
SESSIONS_SHOWN = 3
RELEVANT_SHOWN = 8
RECENT_SHOWN = 15
_FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)
_HEAD_LINE = re.compile(r"^(#\s.*|Tags:.*|Previous session:.*|Working folder:.*)$", re.M)


CLOSING = "\n({count} more item{s} left out for the token budget: use the `search` tool for more)"
RESERVED = estimate_tokens(CLOSING.format(count=99_999, s="s")) + 1  # kept for saying what was left out


@dataclass
class Digest:
    """Lines under a token budget, with room kept for the closing line that counts what did not fit."""

    budget: int
    lines: list[str] = field(default_factory=list)
    used: int = 0
    left_out: int = 0

    def add(self, line: str) -> bool:
        cost = estimate_tokens(line) + 1  # the line break
        if self.used + cost > self.budget - RESERVED:
            self.left_out += 1
            return False
        self.lines.append(line)
        self.used += cost
        return True

    def section(self, heading: str, items: list[str]) -> None:
        """``heading`` and as many of ``items`` as fit (the heading only when one does)."""
        if not items:
            return
        if not self.add(f"\n## {heading}\n{items[0]}"):
            self.left_out += len(items) - 1
            return
        for item in items[1:]:
            self.add(item)

    def text(self) -> str:
        closing = CLOSING.format(count=self.left_out, s="s" if self.left_out != 1 else "") if self.left_out else ""
        return "\n".join(self.lines) + closing if self.lines else ""


def excerpt(body: str | None, chars: int = EXCERPT_CHARS) -> str:
    """The start of a note's text, on one line: no front matter, title, ``Tags:`` or link line."""
    text = _FRONT_MATTER.sub("", body or "", count=1)
    text = " ".join(_HEAD_LINE.sub("", text).replace("#", " ").split())
    if len(text) <= chars:
        return text
    return text[:chars].rsplit(" ", 1)[0] + " …"


def _where(source: str, source_id: str) -> str:
    return f"{source} · {source_id}"


def session_digest(documents: DocumentStorage, keyword: KeywordRanking, settings: HookSettings,
                   project: Project, now: dt.datetime | None = None) -> str:
    """The digest's Markdown for a session on ``project`` (empty when the knowledge base has nothing)."""
    digest = Digest(settings.budget_tokens)
    shown: set[str] = set()
    digest.add(f"# From the knowledge base (context-harness), for project {project.name}")
    digest.section("Pinned notes", _pinned(documents, settings, shown))
    digest.section(f"Last sessions on {project.name}", _sessions(documents, settings, project, shown))
    digest.section(f"About {project.name}", _relevant(documents, keyword, project, shown))
    digest.section(f"Changed in the last {settings.recent_days} days",
                   _recent(documents, settings, shown, now or dt.datetime.now(timestamps.UTC)))
    return digest.text() if len(digest.lines) > 1 else ""


def _pinned(documents: DocumentStorage, settings: HookSettings, shown: set[str]) -> list[str]:
    ids = sorted(documents.document_ids_matching(tags=[settings.pinned_tag]))
    rows = documents.summaries(ids, with_body=True)
    items = []
    for doc_id in sorted(rows, key=lambda d: (rows[d].title or rows[d].source_id).lower()):
        row = rows[doc_id]
        shown.add(doc_id)
        items.append(f"- **{row.title or row.source_id}** ({_where(row.source, row.source_id)}): {excerpt(row.body)}")
    return items


def _sessions(documents: DocumentStorage, settings: HookSettings, project: Project, shown: set[str]) -> list[str]:
    if settings.inbox is None:
        return []
    ids = documents.document_ids_matching(source=settings.inbox, tags=[project.tag])
    rows = documents.summaries(sorted(ids), with_body=True)
    newest = sorted(rows, key=lambda d: rows[d].source_id, reverse=True)[:SESSIONS_SHOWN]  # names start with dates
    items = []
    for doc_id in newest:
        row = rows[doc_id]
        shown.add(doc_id)
        items.append(f"- **{row.title or row.source_id}** ({row.source_id}): {excerpt(row.body)}")
    return items


def _relevant(documents: DocumentStorage, keyword: KeywordRanking, project: Project, shown: set[str]) -> list[str]:
    words = project.words()
    if not words:
        return []
    hits = [h.doc_id for h in keyword.search(words, None, RELEVANT_SHOWN + len(shown)) if h.doc_id not in shown]
    rows = documents.summaries(hits[:RELEVANT_SHOWN])
    items = []
    for doc_id in hits[:RELEVANT_SHOWN]:
        if doc_id in rows:
            shown.add(doc_id)
            items.append(f"- {rows[doc_id].title or rows[doc_id].source_id} "
                         f"({_where(rows[doc_id].source, rows[doc_id].source_id)})")
    return items


def _recent(documents: DocumentStorage, settings: HookSettings, shown: set[str], now: dt.datetime) -> list[str]:
    since = timestamps.since_text(now - dt.timedelta(days=settings.recent_days))
    items, seen = [], set(shown)
    for doc_id, source, source_id, title, kind, at in documents.changes(since, None, RECENT_SHOWN * 3):
        if doc_id in seen:
            continue
        seen.add(doc_id)
        items.append(f"- {str(at)[:10]} {kind}: {title or source_id} ({_where(source, source_id)})")
        if len(items) == RECENT_SHOWN:
            break
    return items
