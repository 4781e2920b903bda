"""A configured connector that cannot run: its table uses environment variables that are not set.

It stands in the connector list so that ``sources`` reports it (``healthy: false``, the variable's
name in ``notes``), its documents are kept (it is still configured), ``sync all`` passes it by and
``sync NAME`` says what to set. A Lua connector whose script does not load stands in the same way
(``lua.connector.SetAsideLuaConnector``), and loads once its file is fixed.
"""

from __future__ import annotations

from collections.abc import Iterator

from context_harness.connectors.base import Candidate, ScanReport
from context_harness.errors import NotConfigured


class UnavailableConnector:
    unavailable = True

    def __init__(self, type_name: str, name: str, reason: str) -> None:
        self.type = type_name
        self.name = name
        self.reason = reason

    @property
    def label(self) -> str:
        return f"{self.type}:{self.name}"

    def health(self) -> tuple[bool, str]:
        return False, self.reason

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        raise NotConfigured(f"{self.label}: {self.reason}")


__all__ = ["UnavailableConnector"]
