"""``[hooks]``: what ``ctx hook`` does for an assistant's client (Claude Code, Codex, Gemini CLI): the
digest it hands a session at its start, and where it writes the note of each session.

``hooks/settings.py`` reads the same keys without this model when the config is plain (no ``${VAR}``
in them), so that ``ctx hook session-start`` starts in a blink; a test keeps the two in step."""

from __future__ import annotations

from pydantic import Field

from context_harness.config.server import _Section

DEFAULT_BUDGET_TOKENS = 2000


class HooksConfig(_Section):
    """``[hooks]``: the context ``ctx hook session-start`` hands a session, and where ``ctx hook pre-compact``
    and ``ctx hook stop`` write session notes."""

    budget_tokens: int = Field(default=DEFAULT_BUDGET_TOKENS, ge=100, le=100_000, description="tokens the digest "
                               "`ctx hook session-start` prints may take (estimated as the chunker estimates them): "
                               "pinned notes first, then this project's last sessions, what matches the project, "
                               "and what changed recently; what does not fit is left out and counted")
    inbox: str | None = Field(default=None, pattern=r"^filesystem:\S+$", description='the writable folder source '
                              'session notes are written to, e.g. "filesystem:notes" (its table needs writable = '
                              "true); unset: `ctx hook pre-compact` and `ctx hook stop` write nothing")
    folder: str = Field(default="sessions", min_length=1, description="the folder of the inbox that session notes "
                        "go to, one subfolder per project (the git repository's name, else the working folder's)")
    pinned_tag: str = Field(default="pinned", min_length=1, description="notes with this tag (front matter tags, or a "
                            "Tags: line) are pinned: always first in the session-start digest")
    recent_days: int = Field(default=7, ge=1, le=3650, description="how far back the digest's list of recent "
                             "changes reaches, in days")
    model: str | None = Field(default=None, min_length=1, description="a chat model of [models.NAME] that writes a "
                              "short summary into the session note at `ctx hook pre-compact` (kept by the stops "
                              "after it; a model that fails leaves the note without one); unset: no model, the "
                              "note is made from the transcript alone")
