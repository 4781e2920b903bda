"""The scopes of a request and the per-tool check, apart from the rest of OAuth: every MCP call passes
``check_tool``, so serving over stdio must not import the authorization server (its HTTP client
among others) to run it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from context_harness.core.face import SCOPES, Harness, required_scope
from context_harness.errors import InsufficientScope

log = logging.getLogger("context_harness.oauth")

GRANTED = "context_harness.scopes"  # the ASGI scope key holding the caller's scopes (absent: no OAuth)
ALL_SCOPES = frozenset(SCOPES)


def granted_scopes(scope: Mapping[str, Any]) -> frozenset[str] | None:
    """The scopes of the request behind ``scope`` (an ASGI scope), or None when OAuth is off."""
    value = scope.get(GRANTED)
    return value if isinstance(value, frozenset) else None


def check_tool(harness: Harness, name: str, agent: str | None, scope: Mapping[str, Any] | None,
               profile: str | None = None) -> None:
    """Raise ``InsufficientScope`` when the request behind ``scope`` may not call tool ``name`` (of
    ``profile``'s tools when given: the tool set the call itself resolves ``name`` in)."""
    granted = granted_scopes(scope) if scope is not None else None
    if granted is None or granted >= ALL_SCOPES:
        return
    offered = harness.tools(agent, profile) if profile else harness.tools(agent)
    tool = next((tool for tool in offered if tool.name == name), None)
    if tool is None:
        return  # the call itself answers unknown_tool
    needed = required_scope(tool)
    if needed not in granted:
        log.warning("oauth: refused %s to a token with scopes %s (needs %r)", name, " ".join(sorted(granted)), needed)
        raise InsufficientScope(f"calling {name} needs the OAuth scope {needed!r} ({SCOPES[needed]}); this token was "
                                f"granted {' '.join(sorted(granted))}: reconnect the client and approve {needed!r}",
                                needed)


__all__ = ["ALL_SCOPES", "GRANTED", "check_tool", "granted_scopes"]
