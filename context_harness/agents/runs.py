"""What a run of an agent takes and lends (``core/running.py`` runs it): the request, the approval a
write waits for, and what an MCP client lends a run it starts (``RUN_CLIENT``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from context_harness.agents.chat import ChatModel

Approver = Callable[["Approval"], Awaitable[str]]  # "yes", "no" or "always" (yes for the rest of the run)
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


@dataclass(frozen=True)
class Approval:
    """A call that needs a person's yes: shown with its arguments."""

    tool: str
    arguments: dict[str, Any]
    why: str  # "writes" or "destructive"


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
