"""What a run of an agent takes and lends (``core/running.py`` runs it): the request, the approval a
write waits for, and what an MCP client lends a run it starts (``RUN_CLIENT``)."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from context_harness.agents.chat import ChatModel

Approver = Callable[["Approval"], Awaitable[str]]  # "yes", "no" or "always" (yes for the rest of the run)
SHOWN_VALUE_CHARS = 300  # of each string argument shown when a person is asked (content is cut, keys never)
StepListener = Callable[[dict[str, Any]], "Awaitable[None] | None"]  # told of each step as it is recorded


@dataclass
class RunRequest:
    agent: str
    task: str
    arguments: dict[str, Any] = field(default_factory=dict)
    model: str | None = None  # a [models.NAME]; overrides the agent's
    yes: bool = False  # approve every write (--yes)
    id: str | None = None  # the run's id (unset: a new one)
    max_steps: int | None = None
    max_seconds: float | None = None
    within: frozenset[str] | None = None  # the caller's scope (a server serving one agent): the run's tools must fit


@dataclass(frozen=True)
class Approval:
    """A call that needs a person's yes: shown with its arguments. ``id`` is this request's own (random,
    never the model's call id) and ``digest`` fingerprints the tool and its arguments: an answer names
    both, so a replayed, stale or misdirected answer approves nothing (the console's form)."""

    tool: str
    arguments: dict[str, Any]
    why: str  # "writes" or "destructive"
    id: str = field(default_factory=lambda: secrets.token_urlsafe(12))

    @property
    def digest(self) -> str:
        """SHA-256 of the tool and its arguments (canonical JSON), hex."""
        canonical = json.dumps({"tool": self.tool, "arguments": self.arguments}, sort_keys=True, ensure_ascii=True,
                               separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def shown(self, longest: int = SHOWN_VALUE_CHARS) -> str:
        """The arguments as JSON for a person to judge: every key and flag, each string value longer
        than ``longest`` cut with a note of what was left out (never the whole text cut at a length,
        which hid the path and the overwrite flag after a long content)."""
        return json.dumps(_shortened(self.arguments, longest), ensure_ascii=False, default=str)

    def answers(self, call: object, digest: object) -> bool:
        """Whether an answer naming ``call`` and ``digest`` is an answer to this request."""
        return (isinstance(call, str) and isinstance(digest, str) and secrets.compare_digest(call, self.id)
                and secrets.compare_digest(digest, self.digest))


def _shortened(value: Any, longest: int) -> Any:
    if isinstance(value, str) and len(value) > longest:
        return value[:longest] + f"[… {len(value) - longest:,} more characters]"
    if isinstance(value, dict):
        return {key: _shortened(item, longest) for key, item in value.items()}
    if isinstance(value, list):
        return [_shortened(item, longest) for item in value]
    return value


@dataclass(frozen=True)
class ClientSide:
    """What an MCP client lends a run it starts with ``agent_run``: its model (sampling, used when no
    ``[models]`` entry is configured) and a person's approval of writes (elicitation). The MCP rim
    sets ``RUN_CLIENT`` for the call; either may be None (the client cannot)."""

    model: ChatModel | None = None
    approver: Approver | None = None
    on_step: StepListener | None = None  # progress notifications to the client


RUN_CLIENT: ContextVar[ClientSide | None] = ContextVar("run_client", default=None)


__all__ = ["RUN_CLIENT", "Approval", "Approver", "ClientSide", "RunRequest", "StepListener"]
