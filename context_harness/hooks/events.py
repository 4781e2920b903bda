"""The hook events ``ctx hook`` answers: the client's JSON in, what to print or write out.

Claude Code, Codex and Gemini CLI send a hook one JSON object on stdin with (at least) ``session_id``,
``transcript_path``, ``cwd`` and ``hook_event_name``; a ``SessionStart`` hook may print
``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": TEXT}}``, which the
three clients add to the session's context. ``start_context`` makes that text (``digest``);
``session_note`` makes the note a ``PreCompact``/``Stop`` (``PreCompress``/``SessionEnd``) hook
writes (``sessions``), which the CLI writes through the note tools so it is searchable at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from context_harness.errors import BadRequest, NotConfigured
from context_harness.hooks import settings as hook_settings
from context_harness.hooks.project import project_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from context_harness.config import Config
    from context_harness.hooks.settings import HookSettings

MAX_EVENT_BYTES = 4_000_000  # a hook's input is a few hundred bytes; Stop's may carry the last answer


def read_event(stream: IO[bytes]) -> dict[str, Any]:
    """The hook's JSON object from ``stream``; an empty input is an empty event (a run by hand)."""
    raw = stream.read(MAX_EVENT_BYTES + 1)
    if len(raw) > MAX_EVENT_BYTES:
        raise BadRequest(f"the hook's input is over {MAX_EVENT_BYTES:,} bytes")
    if not raw.strip():
        return {}
    try:
        event = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise BadRequest(f"the hook's input is not JSON ({type(exc).__name__})") from None
    if not isinstance(event, dict):
        raise BadRequest("the hook's input is not a JSON object")
    return event


def session_output(context: str, event_name: str = "SessionStart") -> dict[str, Any]:
    """What a SessionStart hook prints (Claude Code's shape, which Codex and Gemini CLI read too)."""
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": context}}


def load_settings(config_path: str | None, root: str | None) -> HookSettings:
    """``[hooks]`` and the workspace of the config named (quick read when plain), or the discovered one."""
    if config_path and not root:
        path = Path(config_path).expanduser()
        if not path.is_file():
            raise NotConfigured(f"config file {path} does not exist")
        quick = hook_settings.quick(path)
        if quick is not None:
            return quick
    return hook_settings.from_config(_config(config_path, root))


def _config(config_path: str | None, root: str | None) -> Config:
    from context_harness import config as config_mod

    if root and not config_path:
        return config_mod.for_root(Path(root))
    return config_mod.load(config_path)


def start_context(event: dict[str, Any], settings: HookSettings, config_path: str | None = None,
                  root: str | None = None) -> str:
    """The digest for the session ``event`` starts (reads SQLite and the keyword index only)."""
    from context_harness.hooks.digest import session_digest

    project = project_of(_string(event.get("cwd")))
    if settings.postgres:
        return _postgres_digest(_config(config_path, root), settings, project)
    if not settings.db_path.is_file():
        raise NotConfigured(f"no workspace at {settings.db_path} yet; run `ctx sync` first")
    from context_harness.store.embedded import open_embedded

    backend = open_embedded(settings.db_path, settings.title_boost, False, settings.heading_boost,
                            settings.languages)
    try:
        return session_digest(backend.documents, backend.keyword, settings, project)
    finally:
        backend.close()


def _postgres_digest(config: Config, settings: HookSettings, project: Any) -> str:
    """The digest of a PostgreSQL workspace: the validated config opens it (slower to start)."""
    from context_harness.hooks.digest import session_digest
    from context_harness.store.opening import open_backend
    from context_harness.store.writer_lock import WriterLock

    backend = open_backend(config, WriterLock(settings.db_path.parent / "writer.lock", "the documents"))
    try:
        return session_digest(backend.documents, backend.keyword, settings, project)
    finally:
        backend.close()


@dataclass(frozen=True)
class SessionNote:
    """The note for a session: where it goes, its text, and whether the file holds that text already
    (nothing to write: a Stop after an answer that changed nothing the note says)."""

    source: str
    path: str
    text: str
    unchanged: bool


def session_note(config: Config, event: dict[str, Any], client: str,
                 summarize: Callable[[list[dict[str, str]]], str | None] | None = None) -> SessionNote:
    """The note for the session ``event`` names: ``NotConfigured`` without ``[hooks] inbox`` or when it
    is not a writable folder source; ``BadRequest`` without a transcript. ``summarize`` (pre-compact with
    ``[hooks] model``) is asked for a summary; without it, the note keeps the summary it has."""
    from context_harness.hooks.sessions import kept_summary, note_path, previous_link, render, summary_messages
    from context_harness.hooks.transcript import read_transcript

    inbox = config.hooks.inbox
    if inbox is None:
        raise NotConfigured('[hooks] inbox is not set: name the writable folder source for session notes, e.g. '
                            'inbox = "filesystem:notes"')
    name = inbox.split(":", 1)[1]
    source = config.connectors.filesystem.get(name)
    if source is None or not source.writable:
        raise NotConfigured(f"[hooks] inbox = {inbox!r} is not a folder source with writable = true")
    given = _string(event.get("transcript_path"))
    if given is None:
        raise BadRequest("the hook's input names no transcript_path")
    try:
        transcript = read_transcript(Path(given).expanduser())
    except OSError as exc:
        raise BadRequest(f"the transcript {given} cannot be read ({exc.strerror or type(exc).__name__})") from None
    session_id = _string(event.get("session_id")) or transcript.session_id
    project = project_of(_string(event.get("cwd")) or transcript.cwd)
    rel = note_path(config.hooks.folder, project, transcript, session_id, source.root)
    previous = previous_link(source.root / rel.rsplit("/", 1)[0], source.root / rel)
    try:
        existing: str | None = (source.root / rel).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        existing = None
    summary = kept_summary(existing)
    if summarize is not None and transcript.asks:
        summary = summarize(summary_messages(transcript)) or summary
    text = render(transcript, project, session_id, client, previous, summary)
    return SessionNote(inbox, rel, text, existing == text)


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
