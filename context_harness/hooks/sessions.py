"""The session note ``ctx hook pre-compact`` and ``ctx hook stop`` write: Markdown made from the transcript
alone (no model), dated, tagged, linked to the project's previous session note.

Where: ``[hooks] folder`` / project slug / ``DATE-SESSION.md`` in the inbox source, DATE the day the
session started (UTC; today while the transcript has no record yet) and SESSION the first characters of
the client's session id; a session whose note exists keeps its path, so the same session written again
(pre-compact, then stop after each answer) replaces its one note. The note
keeps the ``Previous session:`` link it was first written with; a new note links the project's
latest other note (by name, which starts with the date; the file written last among the day's).

What it says: the user's requests (each on one line, cut), what was decided (sentences of the
conversation that say so: "decided", "let's", "we'll", "instead of" ...), how it ended (the start of
the assistant's last answer) and the files the assistant changed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

from context_harness.hooks.project import Project, slug
from context_harness.hooks.transcript import Transcript

ASK_CHARS = 300
ASKS_SHOWN = 20
DECISIONS_SHOWN = 12
DECISION_CHARS = 240
OUTCOME_CHARS = 600
FILES_SHOWN = 50
SESSION_CHARS = 8
_DECISION = re.compile(r"\b(decid\w*|agreed|let's|let us|we'll|we will|i'll|going with|go with|chose|settled on|"
                       r"instead of|the plan is|from now on|conclusion)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_PREVIOUS = re.compile(r"^Previous session: (.*)$", re.M)


def one_line(text: str, chars: int) -> str:
    """``text`` on one line, cut at a word within ``chars``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[:chars].rsplit(" ", 1)[0] + " …"


def session_key(session_id: str | None) -> str:
    return slug(session_id or "session")[:SESSION_CHARS] or "session"


def note_path(folder: str, project: Project, transcript: Transcript, session_id: str | None,
              notes_root: Path) -> str:
    """The note's path in the inbox: ``FOLDER/PROJECT/DATE-SESSION.md``; the path the session's note
    already has under ``notes_root`` (the inbox's folder) when there is one."""
    base = f"{folder.strip('/')}/{project.slug}"
    key = session_key(session_id)
    try:
        existing = sorted(notes_root.joinpath(base).glob(f"*-{key}.md"))
    except OSError:
        existing = []
    if existing:
        return f"{base}/{existing[0].name}"
    return f"{base}/{session_day(transcript)}-{key}.md"


def session_day(transcript: Transcript) -> str:
    """The day the session started (UTC, from the transcript's first record), else today."""
    day = (transcript.started or "")[:10]
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        return day
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


def previous_link(notes_folder: Path, own: Path) -> str | None:
    """The ``Previous session:`` line's target for the note at ``own``: the one it already has, else
    a wikilink to the project's latest other note in ``notes_folder``, else None."""
    try:
        kept = _PREVIOUS.search(own.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        kept = None
    if kept:
        return kept.group(1).strip()
    try:
        others = [p for p in notes_folder.glob("*.md") if p.name != own.name and p.is_file()]
    except OSError:
        return None
    if not others:
        return None
    latest = max(others, key=lambda p: (p.name[:10], p.stat().st_mtime, p.name))
    return f"[[{latest.stem}]]"


def decisions(transcript: Transcript) -> list[str]:
    """Sentences of the conversation that say what was decided, once each, in order."""
    found: dict[str, None] = {}
    for text in [*transcript.asks, *transcript.replies]:
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip(" -*#>`")
            if 12 <= len(sentence) and _DECISION.search(sentence) and not sentence.endswith("?"):
                found.setdefault(one_line(sentence, DECISION_CHARS), None)
    return list(found)[:DECISIONS_SHOWN]


def title_of(transcript: Transcript, project: Project) -> str:
    day = session_day(transcript)
    first = next((one_line(a, 70) for a in transcript.asks), "")
    return f"Session {day} · {project.name}" + (f" · {first}" if first else "")


SUMMARY_PROMPT = ("You write the memory of a coding session for the next session on the same project. In at most "
                  "120 words, plain prose: the goal, what was decided and why, and what is left to do. Name files "
                  "and commands exactly; invent nothing.")
PROMPT_CHARS = 24_000  # of the conversation sent to the model: its end, where the state of the work is
_SUMMARY = re.compile(r"^## Summary\n\n(.*?)\n(?=## |\Z)", re.M | re.S)


def summary_messages(transcript: Transcript) -> list[dict[str, str]]:
    """The chat messages that ask a model for the session's summary."""
    turns = [f"User: {a}" for a in transcript.asks] + [f"Assistant: {r}" for r in transcript.replies[-20:]]
    return [{"role": "system", "content": SUMMARY_PROMPT},
            {"role": "user", "content": "\n\n".join(turns)[-PROMPT_CHARS:]}]


def kept_summary(text: str | None) -> str | None:
    """The ``## Summary`` a note already has (a model wrote it at the last pre-compact), or None."""
    found = _SUMMARY.search(text or "")
    return found.group(1).strip() or None if found else None


def render(transcript: Transcript, project: Project, session_id: str | None, client: str,
           previous: str | None, summary: str | None = None) -> str:
    """The note's Markdown: front matter (title, date, tags, session), then its sections."""
    title = title_of(transcript, project)
    meta = [f"title: {json.dumps(title, ensure_ascii=False)}", f"date: {session_day(transcript)}"]
    meta += [f"tags: {json.dumps(['session', project.tag])}", f"project: {json.dumps(project.name)}",
             f"session: {json.dumps(session_id or '')}", f"client: {json.dumps(client)}"]
    meta += [f"updated: {json.dumps(transcript.ended)}"] if transcript.ended else []
    lines = ["---", *meta, "---", "", f"# {title}", ""]
    if previous:
        lines += [f"Previous session: {previous}", ""]
    lines += [f"Working folder: `{project.folder}`", ""]
    lines += ["## Summary", "", summary.strip(), ""] if summary and summary.strip() else []
    lines += _section("Asked", [f"- {one_line(a, ASK_CHARS)}" for a in transcript.asks[:ASKS_SHOWN]],
                      len(transcript.asks) - ASKS_SHOWN)
    lines += _section("Decided", [f"- {d}" for d in decisions(transcript)], 0)
    if transcript.replies:
        lines += ["## Outcome", "", one_line(transcript.replies[-1], OUTCOME_CHARS), ""]
    files = [_shown(f, project.folder) for f in transcript.files]
    lines += _section("Files touched", [f"- `{f}`" for f in files[:FILES_SHOWN]], len(files) - FILES_SHOWN)
    return "\n".join(lines).rstrip() + "\n"


def _section(heading: str, items: list[str], more: int) -> list[str]:
    if not items:
        return []
    tail = [f"- … and {more} more"] if more > 0 else []
    return [f"## {heading}", "", *items, *tail, ""]


def _shown(path: str, folder: Path) -> str:
    """A changed file's path, relative to the working folder when it is inside it."""
    try:
        return Path(path).relative_to(folder).as_posix()
    except ValueError:
        return path
