"""The error hierarchy and the one table that maps each error to every rim's outcome.

Every error a user can cause is a ``HarnessError`` with a stable ``code`` and a message that
names what to fix. The rims never decide an outcome themselves: MCP, HTTP and the CLI look the
error up here (``outcome``) and render what the table says: the HTTP status, whether MCP answers
with an ``isError`` tool result or a JSON-RPC protocol error, and that error's code. The protocol's
own errors (a body that is not JSON, an invalid request, an unknown tool) are rows too. Unknown
exceptions become ``InternalError`` (``as_harness_error``): logged with their traceback, never
echoed, and ``internal`` (JSON-RPC ``-32603``) on every rim.

The command line exits 1 for every error in the table (one line on stderr names the fix); 2 is a
usage error its option parser reports (a missing argument, an unknown option or command).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from context_harness.common.redaction import redact

log = logging.getLogger(__name__)

# JSON-RPC 2.0 error codes (the MCP protocol errors).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class HarnessError(Exception):
    """Base class: ``code`` is stable and part of the API, ``message`` is for humans."""

    code = "internal"

    def __init__(self, message: str) -> None:
        message = redact(message)  # no secret leaves in an error, whichever rim renders it
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


class BadRequest(HarnessError):
    """Invalid arguments or JSON; the message names the field."""

    code = "bad_request"


class NotFound(HarnessError):
    """An unknown document id, tool, agent or route."""

    code = "not_found"


class UnknownTool(NotFound):
    """A tool that is not there (or not in the agent's scope): MCP answers with a protocol error."""


class UnknownWorkspace(NotFound):
    """A workspace name the server does not serve (``--workspaces``); the message names those it does."""


class EmbeddingsDisabled(HarnessError):
    """Semantic or hybrid search asked for, but ``[embedding] provider = "disabled"``."""

    code = "embeddings_disabled"


def embeddings_disabled() -> EmbeddingsDisabled:
    """The one error (and wording) for a request that needs embeddings when they are disabled."""
    return EmbeddingsDisabled(
        "semantic and hybrid search need embeddings, which are disabled in this config "
        '([embedding] provider = "disabled"); set [embedding] provider = "local" (the bundled offline model) '
        'or "openai", run `ctx sync` (or `ctx embed pending`), or search with mode = "keyword"'
    )


class EmbeddingsUnavailable(HarnessError):
    """The embedding model cannot be loaded or reached (yet); the message says why."""

    code = "embeddings_unavailable"


class NotConfigured(HarnessError):
    """Something the request needs is not configured: no connectors, or a component set aside for an unset
    environment variable (the message names it)."""

    code = "not_configured"


class Timeout(HarnessError):
    """A tool, agent or script ran out of time."""

    code = "timeout"


class ToolError(HarnessError):
    """A Lua or extension tool failed; the message carries its error."""

    code = "tool_error"


class AgentError(HarnessError):
    """An agent failed to resolve."""

    code = "agent_error"


class ModelError(HarnessError):
    """A chat model endpoint (``[models.NAME]``) is down, too slow, or answers what is not a chat reply;
    the message names the model, its URL and what went wrong."""

    code = "model_error"


class ConfigError(HarnessError):
    """A configuration file is missing, unreadable or invalid; the message names file and key."""

    code = "config_error"


class StoreBusy(HarnessError):
    """Another process kept writing the workspace (or holding its keyword index writer) for too long."""

    code = "store_busy"


class Busy(HarnessError):
    """A limit on work at once is reached (a Lua tool's calls; a replica's PostgreSQL connections); the
    message says which. Retry."""

    code = "busy"


class StorageFault(HarnessError):
    """The workspace's files cannot be written or read: a read-only folder, a full disk, a damaged
    SQLite file or keyword index. The message names the path and the fix (``store/faults.py``)."""

    code = "storage_error"

    def __init__(self, message: str, kind: str = "storage") -> None:
        super().__init__(message)
        self.kind = kind  # read_only, disk_full, sqlite_damaged, index_damaged, database_unavailable,
        # not_a_database, db_path_folder


class Conflict(HarnessError):
    """A note changed on disk since the version the client read (``expected_version``); the message
    names both versions."""

    code = "conflict"


class InternalError(HarnessError):
    """Anything unexpected: details only in the server log, never in the response."""

    code = "internal"

    def __init__(self, message: str = "internal error; see the server log for details") -> None:
        super().__init__(message)


# -- errors only the HTTP rim raises (its guards and router); the codes are part of the REST API --

class Unauthorized(HarnessError):
    """A missing or wrong bearer token."""

    code = "unauthorized"


class Forbidden(HarnessError):
    """A browser ``Origin`` that is not allowed (the DNS-rebinding defence)."""

    code = "forbidden"


class InvalidToken(Unauthorized):
    """An OAuth access token that is unknown, revoked, expired or issued for another resource (RFC 6750
    ``invalid_token``); the message says which and what to do."""

    code = "invalid_token"


class InsufficientScope(Forbidden):
    """A call the OAuth token's scopes do not cover (RFC 6750 ``insufficient_scope``); the message names
    the scope needed (``needed_scope``, which REST also names in ``WWW-Authenticate``). Over MCP an
    ``isError`` result the model can read."""

    code = "insufficient_scope"

    def __init__(self, message: str, needed_scope: str | None = None) -> None:
        super().__init__(message)
        self.needed_scope = needed_scope


class MisdirectedHost(Forbidden):
    """A ``Host`` header this server does not answer for (HTTP 421 Misdirected Request)."""


class BodyTooLarge(BadRequest):
    """A request body over ``[server] max_body_bytes``."""


class MethodNotAllowed(BadRequest):
    """An HTTP method the route does not take."""


class UnsupportedMediaType(BadRequest):
    """A POST (PUT, PATCH) whose body is not declared ``application/json``: what a page on another
    origin can send without asking (``text/plain``, a form, no type)."""


# -- JSON-RPC errors the HTTP rim answers before the MCP SDK sees a message (``server/rpc.py``) --

class ParseError(BadRequest):
    """A ``POST /mcp`` body that is not strict JSON."""


class InvalidRequest(BadRequest):
    """A JSON-RPC message that is not a valid request (a bad ``id``, an id already in flight)."""


class TooManySessions(Busy):
    """A new MCP session beyond ``[server] max_sessions``."""


@dataclass(frozen=True)
class Outcome:
    http_status: int
    mcp_tool_error: bool  # True (tools/call): an isError result the model can read; False: a protocol error
    jsonrpc_code: int  # the JSON-RPC error code where MCP answers with a protocol error (always, outside tools/call)


# One row per class; a subclass without a row takes its nearest ancestor's.
OUTCOMES: dict[type[HarnessError], Outcome] = {
    BadRequest: Outcome(400, True, INVALID_PARAMS),
    NotFound: Outcome(404, True, INVALID_PARAMS),
    UnknownTool: Outcome(404, False, INVALID_PARAMS),
    EmbeddingsDisabled: Outcome(400, True, INVALID_PARAMS),
    EmbeddingsUnavailable: Outcome(503, True, INTERNAL_ERROR),
    NotConfigured: Outcome(400, True, INVALID_PARAMS),
    Timeout: Outcome(408, True, INVALID_PARAMS),
    ToolError: Outcome(500, True, INTERNAL_ERROR),
    AgentError: Outcome(500, True, INTERNAL_ERROR),
    ModelError: Outcome(502, True, INTERNAL_ERROR),
    ConfigError: Outcome(500, True, INTERNAL_ERROR),
    StoreBusy: Outcome(503, True, INTERNAL_ERROR),
    Busy: Outcome(503, True, INTERNAL_ERROR),
    StorageFault: Outcome(503, True, INTERNAL_ERROR),
    Conflict: Outcome(409, True, INVALID_PARAMS),
    Unauthorized: Outcome(401, False, INVALID_PARAMS),
    Forbidden: Outcome(403, False, INVALID_PARAMS),
    InvalidToken: Outcome(401, False, INVALID_PARAMS),
    InsufficientScope: Outcome(403, True, INVALID_PARAMS),
    MisdirectedHost: Outcome(421, False, INVALID_PARAMS),
    BodyTooLarge: Outcome(413, False, INVALID_PARAMS),
    MethodNotAllowed: Outcome(405, False, INVALID_PARAMS),
    UnsupportedMediaType: Outcome(415, False, INVALID_PARAMS),
    ParseError: Outcome(400, False, PARSE_ERROR),
    InvalidRequest: Outcome(400, False, INVALID_REQUEST),
    TooManySessions: Outcome(503, False, INTERNAL_ERROR),
    HarnessError: Outcome(500, True, INTERNAL_ERROR),
}


def outcome(error: HarnessError) -> Outcome:
    for cls in type(error).__mro__:
        row = OUTCOMES.get(cls)
        if row is not None:
            return row
    return OUTCOMES[HarnessError]


def error_for_status(status: int, message: str) -> HarnessError:
    """An error for an HTTP status the web framework chose (its router's 404 or 405): the table's
    first row with that status, else ``BadRequest`` for another 4xx; ``InternalError`` for the rest."""
    if not 400 <= status < 500:
        return InternalError()
    cls = next((cls for cls, row in OUTCOMES.items() if row.http_status == status), BadRequest)
    return cls(message)


def as_harness_error(exc: BaseException, where: str) -> HarnessError:
    """A ``HarnessError`` for any exception; unknown ones are logged with traceback, never echoed."""
    if isinstance(exc, HarnessError):
        return exc
    log.error("%s failed", where, exc_info=exc)
    return InternalError()
