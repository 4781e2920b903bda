"""What each ``ctx registry`` operation returns (``registries/service.py``), typed: the CLI renders these,
and ``--json`` prints them as they are."""

from __future__ import annotations

from typing import Any, TypedDict


class Initialised(TypedDict):
    name: str
    url: str
    config: str
    commit: str | None


class RegistryRow(TypedDict):
    name: str
    url: str
    tier: str
    commit: str | None
    description: str
    extensions: int


class ExtensionRow(TypedDict):
    id: str
    description: str
    tags: list[str]
    origin: str
    capabilities: list[str]
    state: str
    on: bool
    off_reason: str | None
    new_asks: list[str]


class Listing(TypedDict):
    registries: list[RegistryRow]
    extensions: list[ExtensionRow]
    errors: list[str]


class CopyRow(TypedDict):
    origin: str
    commit: str | None


class Enabled(TypedDict):
    source: str
    commit: str | None
    sha256: str
    asks: list[str]


class ExtensionInfo(TypedDict):
    id: str
    manifest: dict[str, Any] | None
    script: str | None
    winner: str
    why: str
    copies: list[CopyRow]
    state: str
    sha256: str | None
    enabled: Enabled | None


class Added(TypedDict):
    id: str
    name: str
    table: str
    config: str
    set: list[str]


# "from" is a Python keyword, hence the functional form
UpdatePlanOut = TypedDict("UpdatePlanOut", {"registry": str, "from": str, "to": str, "changed": list[str],
                                            "new_asks": dict[str, list[str]], "applied": bool, "note": str})


class Removed(TypedDict):
    name: str
    config: str


class Switched(TypedDict, total=False):
    id: str
    enabled: bool
    capabilities: list[str]
    hosts: list[str]
    env: list[str]
    origin: str
    sha256: str
    was: str | None


class Overridden(TypedDict):
    id: str
    copied_to: str
    script: str
