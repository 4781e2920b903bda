"""A client's session transcript read into what a session note says: what the user asked, what the
assistant answered, which files it changed. No model: the text as the client recorded it.

Three formats, told apart by their records:

- **Claude Code** (JSONL): ``{"type": "user"|"assistant", "message": {"role", "content"}, "timestamp",
  "cwd", "sessionId"}``; content is a string or blocks (``text``, ``tool_use`` with ``name`` and
  ``input``, ``tool_result``); meta lines (``isMeta``), compaction summaries (``isCompactSummary``) and
  slash-command echoes are not the user's words.
- **Codex** (rollout JSONL): ``{"type": "session_meta"|"response_item", "payload": ...}``; a
  ``response_item`` is a ``message`` (role, ``input_text``/``output_text`` parts) or a
  ``function_call``/``custom_tool_call`` (``apply_patch`` names the files it changes).
- **Gemini CLI** (JSONL since 0.5x, one JSON object before): a metadata record, then messages
  ``{"id", "timestamp", "type": "user"|"gemini", "content", "toolCalls": [{"name", "args"}]}``, a
  message written again when it changes (the last one wins), and ``{"$set": {"messages": [...]}}``
  records that set the whole list anew.

Lines that are not JSON or not of these shapes are passed by: a transcript is read as far as it makes
sense, never refused for a line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_BYTES = 64 * 1024 * 1024  # a transcript past this is read from its end
EDIT_TOOLS = {"Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path", "NotebookEdit": "notebook_path",
              "write_file": "file_path", "replace": "file_path", "edit": "file_path"}  # Claude Code, Gemini CLI
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
# What the client put in the user's turn itself: a tagged block (Claude Code's <command-name> and
# <system-reminder>, Codex's <environment_context>, Gemini CLI's <session_context> and <hook_context>, which
# holds the digest ``ctx hook session-start`` gave), and instruction files.
_TAGGED = re.compile(r"\s*<([a-z][a-z_-]*)>.*?</\1>\s*", re.S)
_NOT_ASKED = re.compile(r"\s*(<[a-z][a-z_-]*>|Caveat:|# AGENTS\.md)")


@dataclass
class Transcript:
    """What a session transcript holds, in order."""

    session_id: str | None = None
    cwd: str | None = None
    started: str | None = None  # ISO timestamps of the first and last records
    ended: str | None = None
    asks: list[str] = field(default_factory=list)  # the user's messages
    replies: list[str] = field(default_factory=list)  # the assistant's text, one item per message
    files: list[str] = field(default_factory=list)  # changed, in the order first changed

    def touched(self, path: str) -> None:
        if path and path not in self.files:
            self.files.append(path)

    def stamp(self, at: Any) -> None:
        if isinstance(at, str) and at:
            self.started = self.started or at
            self.ended = at


def read_transcript(path: Path) -> Transcript:
    """The transcript at ``path`` (any of the three formats); ``OSError`` when it cannot be read."""
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - MAX_BYTES))
        raw = handle.read().decode("utf-8", errors="replace")
    stripped = raw.lstrip()
    if stripped.startswith("{") and "\n{" not in stripped.rstrip():  # one JSON document (older Gemini CLI)
        try:
            whole = json.loads(stripped)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
            return _gemini([whole, *whole["messages"]])
    records = []
    for line in raw.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    if any(r.get("type") in ("session_meta", "response_item") and "payload" in r for r in records[:50]):
        return _codex(records)
    if any("message" in r and r.get("type") in ("user", "assistant") for r in records):
        return _claude(records)
    return _gemini(records)


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` of its parts."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") in (None, "text",
                 "input_text", "output_text")]
        return "\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    return ""


def asked(text: str) -> str:
    """The user's own words in a user turn: what follows the tagged blocks the client put first, or ""."""
    while (block := _TAGGED.match(text)) is not None:
        text = text[block.end():]
    return "" if _NOT_ASKED.match(text) else text.strip()


def _claude(records: list[dict[str, Any]]) -> Transcript:
    out = Transcript()
    for record in records:
        out.session_id = out.session_id or _string(record.get("sessionId"))
        out.cwd = out.cwd or _string(record.get("cwd"))
        message = record.get("message")
        if record.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue
        out.stamp(record.get("timestamp"))
        content = message.get("content")
        if record["type"] == "user":
            text = asked(_text(content))
            if text and not record.get("isMeta") and not record.get("isCompactSummary"):
                out.asks.append(text)
            continue
        text = _text(content)
        if text:
            out.replies.append(text)
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") in EDIT_TOOLS:
                given = block.get("input")
                if isinstance(given, dict):
                    out.touched(_string(given.get(EDIT_TOOLS[block["name"]])) or "")
    return out


def _codex(records: list[dict[str, Any]]) -> Transcript:
    out = Transcript()
    for record in records:
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        out.stamp(record.get("timestamp"))
        if record.get("type") == "session_meta":
            out.session_id = out.session_id or _string(payload.get("id"))
            out.cwd = out.cwd or _string(payload.get("cwd"))
        if record.get("type") != "response_item":
            continue
        kind = payload.get("type")
        if kind == "message":
            text = _text(payload.get("content"))
            if payload.get("role") == "user" and asked(text):
                out.asks.append(asked(text))
            elif payload.get("role") == "assistant" and text:
                out.replies.append(text)
        elif kind in ("function_call", "custom_tool_call"):
            given = payload.get("arguments", payload.get("input"))
            for path in _PATCH_FILE.findall(given if isinstance(given, str) else json.dumps(given)):
                out.touched(path.strip())
    return out


def _gemini(records: list[dict[str, Any]]) -> Transcript:
    out = Transcript()
    messages: dict[str, dict[str, Any]] = {}
    for n, record in enumerate(records):
        if "messages" in record or "projectHash" in record or "startTime" in record:
            out.session_id = out.session_id or _string(record.get("sessionId"))
            continue
        update = record.get("$set")
        if isinstance(update, dict) and isinstance(update.get("messages"), list):  # the whole list, set anew
            messages = {str(m.get("id", f"{n}.{i}")): m for i, m in enumerate(update["messages"])
                        if isinstance(m, dict) and m.get("type") in ("user", "gemini")}
            continue
        if record.get("type") in ("user", "gemini"):
            messages[str(record.get("id", n))] = record  # written again when it changes: the last wins
    for message in messages.values():
        out.stamp(message.get("timestamp"))
        text = _text(message.get("content"))
        if message["type"] == "user":
            if asked(text):
                out.asks.append(asked(text))
            continue
        if text:
            out.replies.append(text)
        for call in message.get("toolCalls") or []:
            if isinstance(call, dict) and call.get("name") in EDIT_TOOLS and isinstance(call.get("args"), dict):
                out.touched(_string(call["args"].get(EDIT_TOOLS[call["name"]])) or "")
    return out


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
