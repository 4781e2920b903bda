"""The connector types (kinds) by name. Built-ins register here exactly as extensions do.

``build(config)`` makes a connector for every ``[connectors.<type>.NAME]`` table of the config,
built-in types and extension types alike, plus the connector instances registered in code.
``default_kinds()`` holds the types of this package (filesystem, git, s3); the Lua ``script`` type
is registered by ``extensions.py``, as an extension's type is, so connectors never import ``lua/``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from context_harness.config import Config
from context_harness.connectors.base import Connector
from context_harness.connectors.unavailable import UnavailableConnector
from context_harness.errors import ConfigError

ConnectorFactory = Callable[[str, Any, Config], Connector]


BUILTIN_TYPES = ("filesystem", "git", "s3", "script")


class ConnectorKinds:
    def __init__(self) -> None:
        self._factories: dict[str, ConnectorFactory] = {}
        self._instances: list[Connector] = []

    def register(self, type_name: str, factory: ConnectorFactory) -> None:
        if type_name in self._factories:
            raise ConfigError(f"connector type {type_name!r} is registered twice")
        self._factories[type_name] = factory

    def add_instance(self, connector: Connector) -> None:
        """A connector made in code (not from a config table)."""
        self._instances.append(connector)

    def types(self) -> list[str]:
        return sorted(self._factories)

    def build(self, config: Config) -> list[Connector]:
        """Every connector the config declares (built-in types first, then extension types, each
        in name order; those set aside for unset variables as ``UnavailableConnector``s), then the
        instances registered in code. An unknown type or a label defined
        twice is a ``ConfigError``."""
        connectors: list[Connector] = []
        tables = {t: getattr(config.connectors, t) for t in BUILTIN_TYPES}
        tables.update(sorted(config.connectors.extension_tables().items()))
        for type_name, entries in tables.items():
            if not entries:
                continue
            factory = self._factories.get(type_name)
            if factory is None:
                raise ConfigError(
                    f"{config.source_path or '<config>'}: connectors.{type_name}: unknown connector type "
                    f"(available: {', '.join(self.types())}; extension types come from installed packages)"
                )
            for name in sorted(entries):
                connectors.append(factory(name, entries[name], config))
        for missing in config.unavailable:
            if missing.kind == "connector":
                type_name, _, name = missing.name.partition(":")
                connectors.append(UnavailableConnector(type_name, name, missing.message))
        labels = {c.label for c in connectors}
        for connector in self._instances:
            if connector.label in labels:
                raise ConfigError(f"connector {connector.label} is defined twice (config and code)")
            labels.add(connector.label)
            connectors.append(connector)
        return connectors


def _filesystem(name: str, entry: Any, config: Config) -> Connector:
    from context_harness.connectors.filesystem import FilesystemConnector

    return FilesystemConnector(name, entry)


def _git(name: str, entry: Any, config: Config) -> Connector:
    from context_harness.connectors.git import GitConnector

    return GitConnector(name, entry, config.data_dir / "git" / name)


def _s3(name: str, entry: Any, config: Config) -> Connector:
    from context_harness.connectors.s3 import S3Connector

    return S3Connector(name, entry)


def default_kinds() -> ConnectorKinds:
    kinds = ConnectorKinds()
    kinds.register("filesystem", _filesystem)
    kinds.register("git", _git)
    kinds.register("s3", _s3)
    return kinds
