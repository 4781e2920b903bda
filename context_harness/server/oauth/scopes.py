"""The scopes of a request and the per-tool check, apart from the rest of OAuth: every MCP call passes
``check_tool``, so serving over stdio must not import the authorization server (its HTTP client
among others) to run it.

With ``--workspaces`` a scope may name a workspace: ``read``, ``write`` and ``agents`` grant that on
every workspace, ``read:NAME``, ``write:NAME`` and ``agents:NAME`` on workspace ``NAME`` only
(``workspace_grants``). A token sees the workspaces it may read; ``check_tool`` lets a call through
when some workspace grants its scope, and the router checks the workspace the call reaches.
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
SEPARATOR = ":"  # write:NAME


def granted_scopes(scope: Mapping[str, Any]) -> frozenset[str] | None:
    """The scopes of the request behind ``scope`` (an ASGI scope), or None when OAuth is off."""
    value = scope.get(GRANTED)
    return value if isinstance(value, frozenset) else None


def scope_names(workspaces: list[str]) -> list[str]:
    """Every scope a token may hold with ``workspaces`` served: the three, then each per workspace."""
    return [*SCOPES, *(f"{scope}{SEPARATOR}{name}" for name in workspaces for scope in SCOPES)]


def workspace_grants(scopes: frozenset[str] | set[str] | list[str], workspaces: list[str]
                     ) -> dict[str, frozenset[str]]:
    """What ``scopes`` grant on each of ``workspaces``: ``read``, ``write``, ``agents`` (a workspace's
    ``write`` or ``agents`` counts only with its ``read``: a workspace the token cannot read it cannot see)."""
    out: dict[str, frozenset[str]] = {}
    for name in workspaces:
        own = frozenset(s for s in SCOPES if s in scopes or f"{s}{SEPARATOR}{name}" in scopes)
        if "read" in own:
            out[name] = own
    return out


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
    if needed not in granted and not any(s.startswith(needed + SEPARATOR) for s in granted):
        log.warning("oauth: refused %s to a token with scopes %s (needs %r)", name, " ".join(sorted(granted)), needed)
        seen = sorted(s.partition(SEPARATOR)[2] for s in granted if s.startswith("read" + SEPARATOR))
        either = "".join(f" or '{needed}{SEPARATOR}{w}'" for w in seen)  # --workspaces: those it sees
        raise InsufficientScope(f"calling {name} needs the OAuth scope {needed!r} ({SCOPES[needed]}); this token was "
                                f"granted {' '.join(sorted(granted))}: reconnect the client and approve {needed!r}"
                                f"{either}", needed)


__all__ = ["ALL_SCOPES", "GRANTED", "SEPARATOR", "check_tool", "granted_scopes", "scope_names", "workspace_grants"]
