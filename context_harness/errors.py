"""The error hierarchy and the one table that maps each error to every adapter's outcome.

Every error a user can cause is a ``HarnessError`` with a stable ``code`` and a message that
names what to fix. Adapters never format exceptions themselves: they look the code up here.
"""

from __future__ import annotations

from dataclasses import dataclass


class HarnessError(Exception):
    """Base class: ``code`` is stable and part of the API, ``message`` is for humans."""

    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict:
        return {"error": {"code": self.code, "message": self.message}}


class BadRequest(HarnessError):
    code = "bad_request"


class NotFound(HarnessError):
    code = "not_found"


class EmbeddingsDisabled(HarnessError):
    code = "embeddings_disabled"


def embeddings_disabled() -> EmbeddingsDisabled:
    """The one error (and wording) for a request that needs embeddings when they are disabled."""
    return EmbeddingsDisabled(
        "semantic and hybrid search need embeddings, which are disabled in this config "
        '([embedding] provider = "disabled"); set [embedding] provider = "local" (the bundled offline model) '
        'or "openai", run `ctx sync` (or `ctx embed pending`), or search with mode = "keyword"'
    )


class EmbeddingsUnavailable(HarnessError):
    code = "embeddings_unavailable"


class NotConfigured(HarnessError):
    code = "not_configured"


class Timeout(HarnessError):
    code = "timeout"


class ToolError(HarnessError):
    code = "tool_error"


class AgentError(HarnessError):
    code = "agent_error"


class ConfigError(HarnessError):
    """A configuration file is missing, unreadable or invalid; the message names file and key."""

    code = "config_error"


class StoreBusy(HarnessError):
    """Another process holds the index writer."""

    code = "store_busy"


class InternalError(HarnessError):
    code = "internal"

    def __init__(self, message: str = "internal error; see the server log for details") -> None:
        super().__init__(message)


@dataclass(frozen=True)
class Outcome:
    http_status: int
    mcp_tool_error: bool  # True: an isError tool result the model can read; False: a protocol error
    exit_code: int


OUTCOMES: dict[str, Outcome] = {
    "bad_request": Outcome(400, True, 1),
    "not_found": Outcome(404, True, 1),
    "embeddings_disabled": Outcome(400, True, 1),
    "embeddings_unavailable": Outcome(503, True, 1),
    "not_configured": Outcome(400, True, 1),
    "timeout": Outcome(408, True, 1),
    "tool_error": Outcome(500, True, 1),
    "agent_error": Outcome(500, True, 1),
    "config_error": Outcome(500, True, 1),
    "store_busy": Outcome(503, True, 1),
    "internal": Outcome(500, True, 1),
}


def outcome(error: HarnessError) -> Outcome:
    return OUTCOMES.get(error.code, OUTCOMES["internal"])
