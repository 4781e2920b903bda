"""The text edits ``note_edit`` applies, as pure functions of a note's text (LF line endings)."""

from __future__ import annotations

import re

from context_harness.errors import BadRequest

HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")


def front_matter_end(text: str) -> int:
    """Where the text after a leading ``---`` front matter block starts (0 when there is none)."""
    if not text.startswith("---\n"):
        return 0
    end = text.find("\n---\n", 3)
    if end < 0:
        return len(text) if text.endswith("\n---") else 0
    return end + len("\n---\n")


def append(text: str, addition: str) -> str:
    """``addition`` as a new paragraph at the end: one blank line between it and the note's last
    line (none added when the note ends with one already, or is empty)."""
    if text.strip():
        text = text.rstrip("\n") + "\n\n" if not text.endswith("\n\n") else text
        addition = addition.lstrip("\n")
    return text + addition + ("" if addition.endswith("\n") else "\n")


def prepend(text: str, addition: str, at: int | None = None) -> str:
    """``addition`` at the top: at ``at`` (after what must stay first, such as the title and tags lines
    ``note_write`` wrote), else after the front matter."""
    at = front_matter_end(text) if at is None else at
    return text[:at] + addition + ("" if addition.endswith("\n") else "\n") + text[at:]


def _headings(text: str) -> list[tuple[int, int, int, list[str]]]:
    """(line start, line end, level, heading path) of each ATX heading outside code fences."""
    out: list[tuple[int, int, int, list[str]]] = []
    stack: list[tuple[int, str]] = []
    fenced = False
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\n")
        if stripped.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        match = None if fenced else HEADING.match(stripped)
        if match:
            level = len(match.group(1))
            stack = [s for s in stack if s[0] < level] + [(level, match.group(2).strip())]
            out.append((offset, offset + len(line), level, [name for _, name in stack]))
        offset += len(line)
    return out


def replace_section(text: str, heading: str, body: str, keep: int = 0) -> str:
    """Replace the body under ``heading`` (its text, or a path ``A > B``) up to the next heading of the
    same or a higher level; the heading line itself stays, and so does what comes before ``keep``
    (the tags line ``note_write`` writes under the title)."""
    wanted = [part.strip() for part in heading.split(">") if part.strip()]
    if not wanted:
        raise BadRequest("heading is empty; give a heading's text, or a path such as 'Plans > Friday'")
    headings = _headings(text)
    found = [h for h in headings if h[3][-len(wanted):] == wanted]
    if not found:
        raise BadRequest(f"no heading {heading!r} in this note; give its exact text (or a path 'A > B')")
    if len(found) > 1:
        raise BadRequest(f"heading {heading!r} occurs {len(found)} times; give its path, e.g. 'Parent > {wanted[-1]}'")
    _, line_end, level, _ = found[0]
    end = next((h[0] for h in headings if h[0] >= line_end and h[2] <= level), len(text))
    if body and not body.endswith("\n"):
        body += "\n"
    if end < len(text) and body:
        body += "\n"
    start = min(max(line_end, keep), end)
    return text[:start] + body + text[end:]


def find_replace(text: str, find: str, replace: str, count: int = 1) -> str:
    """Replace every occurrence of ``find``; ``BadRequest`` unless there are exactly ``count``."""
    if not find:
        raise BadRequest("find is empty; give the exact text to replace")
    found = text.count(find)
    if found != count:
        raise BadRequest(f"find text occurs {found} times, not the {count} expected; read the note again "
                         "and give the count it has (or a longer, unique text)")
    return text.replace(find, replace)


__all__ = ["append", "find_replace", "front_matter_end", "prepend", "replace_section"]
