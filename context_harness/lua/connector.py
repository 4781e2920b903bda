"""Lua connectors: ``[connectors.script.NAME]`` scripts that pull documents from anywhere.

The script defines ``connector.scan(config)`` returning an array of items::

    { source_id = "42", body = "...",                       -- required
      title, author, source_url, content_type,              -- optional strings
      metadata = { ... } (or the original's metadata_json = "{...}"), tags = { "a", "b" },
      created_at / updated_at = "2026-01-05T10:00:00Z" | 1767607200 (unix seconds) }

``config`` is the entry's free TOML keys (``${VAR}`` already expanded). Invalid items are skipped
with one warning each (``ScanReport.skip("invalid_item", ...)``); the source label is
``script:NAME``. Sync treats it like any connector: no fingerprint, so content hashes decide.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from context_harness.common import timestamps
from context_harness.config import LuaConfig, ScriptConfig, Unavailable
from context_harness.connectors.base import Candidate, ScanReport, SourceItem
from context_harness.errors import ConfigError, HarnessError, NotConfigured, ToolError
from context_harness.lua.engine import ItemRow
from context_harness.lua.script import LuaScript

log = logging.getLogger(__name__)

STRING_FIELDS = ("title", "author", "source_url", "content_type")
MAX_ITEM_BYTES = 64_000_000
MAX_ITEM_NODES = 100_000


class InvalidItem(Exception):
    pass


def parse_timestamp(value: Any, field: str) -> dt.datetime | None:
    """RFC 3339 / ISO 8601 text or unix seconds -> aware UTC datetime (naive text is taken as UTC)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidItem(f"{field} must be an RFC 3339 string or unix seconds")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InvalidItem(f"{field} must be a finite number")
        try:
            return timestamps.from_unix(value)
        except (OverflowError, OSError, ValueError):
            raise InvalidItem(f"{field}: {value} is out of range for unix seconds") from None
    if isinstance(value, str):
        try:
            return timestamps.parse(value)
        except ValueError:
            raise InvalidItem(f"{field}: {value[:40]!r} is not an RFC 3339 timestamp") from None
    raise InvalidItem(f"{field} must be an RFC 3339 string or unix seconds")


def build_item(data: Any) -> SourceItem:
    """One converted item table -> ``SourceItem``, or ``InvalidItem`` saying what is wrong."""
    if not isinstance(data, dict):
        raise InvalidItem("an item must be a table with source_id and body")
    source_id = data.get("source_id")
    if isinstance(source_id, (int, float)) and not isinstance(source_id, bool):
        source_id = str(int(source_id)) if float(source_id).is_integer() else str(source_id)
    if not isinstance(source_id, str) or not source_id.strip():
        raise InvalidItem("missing source_id (a non-empty string)")
    body = data.get("body")
    if not isinstance(body, str):
        raise InvalidItem(f"item '{source_id[:80]}': missing body (a string)")
    if not body.strip():
        raise InvalidItem(f"item '{source_id[:80]}': empty body")
    fields: dict[str, Any] = {}
    for key in STRING_FIELDS:
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise InvalidItem(f"item '{source_id[:80]}': {key} must be a string")
        fields[key] = value
    metadata = data.get("metadata")
    if metadata is None and isinstance(data.get("metadata_json"), str):
        try:
            metadata = json.loads(data["metadata_json"])
        except ValueError:
            raise InvalidItem(f"item '{source_id[:80]}': metadata_json is not valid JSON") from None
    if metadata in (None, [], {}):
        metadata = {}
    if not isinstance(metadata, dict):
        raise InvalidItem(f"item '{source_id[:80]}': metadata must be a table of names to values")
    tags = data.get("tags")
    if tags in (None, {}, []):
        tags = []
    elif isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    elif not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidItem(f"item '{source_id[:80]}': tags must be an array of strings")
    try:
        created = parse_timestamp(data.get("created_at"), "created_at")
        updated = parse_timestamp(data.get("updated_at"), "updated_at")
    except InvalidItem as exc:
        raise InvalidItem(f"item '{source_id[:80]}': {exc}") from None
    return SourceItem(source_id=source_id, body=body, metadata=metadata, tags=tags,
                      created_at=created, updated_at=updated, **fields)


class LuaConnector:
    """A ``Connector`` backed by ``connector.scan(config)``. Blocking; call ``scan`` from a worker thread.

    ``scan`` raises ``ToolError`` (script error, bad return value, out of memory) or ``Timeout``
    (default 300 s, per-script ``timeout``); construction raises ``ConfigError``.
    """

    type = "script"

    def __init__(self, name: str, script_config: ScriptConfig, lua_config: LuaConfig | None = None) -> None:
        self.name = name
        self.config = script_config
        self.script = LuaScript(
            script_config.path, name=name, kind="connector", lua_config=lua_config, timeout=script_config.timeout,
            memory_limit=script_config.memory_limit, env=script_config.env, config=script_config.extra,
            global_name="connector", max_instances=1, grant=script_config.grant)

    @property
    def label(self) -> str:
        return f"script:{self.name}"

    def fetch(self, report: ScanReport | None = None) -> list[SourceItem]:
        """Run the script once and return its valid items (duplicates after the first are skipped)."""
        report = report if report is not None else ScanReport()
        kind, rows = self.script.call_items("connector.scan", self.script.config,
                                            max_nodes=MAX_ITEM_NODES, max_bytes=MAX_ITEM_BYTES)
        if kind is not None:
            raise ToolError(f"{self.script.what}: connector.scan must return an array of items, not {kind}")
        return self._items(rows, report)

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        for item in self.fetch(report):
            yield Candidate(item.source_id, None, load=_loader(item))

    def _items(self, rows: list[ItemRow], report: ScanReport) -> list[SourceItem]:
        items: list[SourceItem] = []
        seen: set[str] = set()
        for index, data, invalid in rows:
            if invalid is not None:
                self._skip(report, "invalid_item", f"item {index}: {invalid}")
                continue
            try:
                item = build_item(data)
            except InvalidItem as exc:
                self._skip(report, "invalid_item", f"item {index}: {exc}")
                continue
            if item.source_id in seen:
                self._skip(report, "duplicate_id",
                           f"item {index}: source_id '{item.source_id[:80]}' repeats an earlier item")
                continue
            seen.add(item.source_id)
            items.append(item)
        return items

    def _skip(self, report: ScanReport, reason: str, detail: str) -> None:
        message = f"{self.label}: skipped {detail}"
        log.warning("%s", message)
        report.skip(reason, message)


class SetAsideLuaConnector:
    """A ``[connectors.script.NAME]`` whose script did not load (syntax error, error at load): it
    stands in the connector list like an ``UnavailableConnector`` (``unavailable``, ``health()``
    false with the error, so ``sources`` names it and ``sync all`` passes it by) until its file
    changes and loads; from then on it is that ``LuaConnector``, with no restart."""

    type = "script"

    def __init__(self, name: str, script_config: ScriptConfig, lua_config: LuaConfig | None, error: str) -> None:
        self.name = name
        self.config = script_config
        self.lua_config = lua_config
        self.error = error
        self._tried = _digest(script_config.path)
        self._loaded: LuaConnector | None = None
        self._lock = threading.Lock()
        log.warning("connector %s is unavailable: %s", self.label, self.message)

    @property
    def label(self) -> str:
        return f"script:{self.name}"

    @property
    def message(self) -> str:
        return Unavailable(kind="connector", name=self.label, key_path=f"connectors.script.{self.name}",
                           variables=[], error=self.error).message

    @property
    def unavailable(self) -> bool:
        return self.current() is None

    def current(self) -> LuaConnector | None:
        """The loaded connector, trying the script again when its file changed since the last try."""
        with self._lock:
            digest = _digest(self.config.path)
            if self._loaded is None and digest != self._tried:
                self._tried = digest
                try:
                    self._loaded = LuaConnector(self.name, self.config, self.lua_config)
                except HarnessError as exc:
                    self.error = exc.message
                    log.warning("connector %s is still unavailable: %s", self.label, self.message)
                else:
                    log.info("connector %s loads again and is available", self.label)
            return self._loaded

    def health(self) -> tuple[bool, str | None]:
        return (True, None) if self.current() is not None else (False, self.message)

    def fetch(self, report: ScanReport | None = None) -> list[SourceItem]:
        return self._require().fetch(report)

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        return self._require().scan(report)

    def _require(self) -> LuaConnector:
        loaded = self.current()
        if loaded is None:
            raise NotConfigured(f"{self.label}: {self.message}")
        return loaded


def script_connector(name: str, script_config: ScriptConfig, lua_config: LuaConfig | None = None
                     ) -> LuaConnector | SetAsideLuaConnector:
    """The connector of a ``[connectors.script.NAME]`` table: a ``LuaConnector``, or when its script
    does not load a ``SetAsideLuaConnector`` (the server starts and serves the other sources)."""
    try:
        return LuaConnector(name, script_config, lua_config)
    except ConfigError as exc:
        return SetAsideLuaConnector(name, script_config, lua_config, exc.message)


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _loader(item: SourceItem) -> Callable[[], SourceItem]:
    return lambda: item
