"""One registry of connector types. Built-ins register here exactly as extensions do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from context_harness.config import Config
from context_harness.connectors.base import Connector
from context_harness.errors import ConfigError

ConnectorFactory = Callable[[str, Any, Config], Connector]


class ConnectorRegistry:
    def __init__(self) -> None:
        self._factories: dict[str, ConnectorFactory] = {}

    def register(self, type_name: str, factory: ConnectorFactory) -> None:
        if type_name in self._factories:
            raise ConfigError(f"connector type {type_name!r} is registered twice")
        self._factories[type_name] = factory

    def types(self) -> list[str]:
        return sorted(self._factories)

    def build(self, config: Config) -> list[Connector]:
        """Every connector the config declares, in label order."""
        connectors: list[Connector] = []
        for type_name in ("filesystem", "git", "script"):
            entries: dict[str, Any] = getattr(config.connectors, type_name)
            if not entries:
                continue
            factory = self._factories.get(type_name)
            if factory is None:
                raise ConfigError(
                    f"{config.source_path or '<config>'}: connectors.{type_name}: this connector type is not "
                    f"available in this version (available: {', '.join(self.types())})"
                )
            for name in sorted(entries):
                connectors.append(factory(name, entries[name], config))
        return connectors


def _filesystem(name: str, entry: Any, config: Config) -> Connector:
    from context_harness.connectors.filesystem import FilesystemConnector

    return FilesystemConnector(name, entry)


def _git(name: str, entry: Any, config: Config) -> Connector:
    from context_harness.connectors.git import GitConnector

    return GitConnector(name, entry, config.data_dir / "git" / name)


def _script(name: str, entry: Any, config: Config) -> Connector:
    from context_harness.lua.connector import LuaConnector

    return LuaConnector(name, entry, config.lua)


def default_registry() -> ConnectorRegistry:
    registry = ConnectorRegistry()
    registry.register("filesystem", _filesystem)
    registry.register("git", _git)
    registry.register("script", _script)
    return registry
