"""What a connector is: something that lists source items and can load each one.

Built-in connectors (filesystem, git) and extension connectors (Lua scripts, Python entry points)
all implement ``Connector``; the sync pipeline treats them alike.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from context_harness.common.timestamps import to_iso
from context_harness.formats import documents

MAX_NAMED = 100  # skipped items a report keeps by name (all are counted)

ERROR_SKIP_REASONS = frozenset({"error", "unreadable", "scan_error", "path_too_long", "invalid_item"})
"""Skip reasons that mean something went wrong with an item (an exception loading or parsing it, the
OS refusing to read it, a scan cut short, a script connector's invalid item), as opposed to skips by
design (``symlink``, ``too_large``, ``not_a_regular_file``, ``binary``, ``needs_documents_extra``
...): a source with any of them is degraded."""


@dataclass
class SourceItem:
    """One document as a connector delivers it. ``source_id`` and ``body`` are required.

    A document still to convert (PDF, DOCX, HTML) comes as ``raw`` bytes with its ``content_type``
    and an empty ``body``; the sync converts it (in the chunk helper processes on large syncs) and
    replaces ``body``, and ``title`` when the document names one."""

    source_id: str
    body: str
    title: str | None = None
    author: str | None = None
    source_url: str | None = None
    content_type: str = "text/markdown"
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    created_at: dt.datetime | None = None
    updated_at: dt.datetime | None = None
    raw: bytes | None = None

    def version(self) -> str:
        """The hash of everything stored about the item: the version a sync stores and write-back
        compares with. A document still to convert is hashed by its bytes (and the converter's version)."""
        fields: list[Any] = [self.title, self.body, self.author, self.source_url, self.content_type, self.metadata,
                             self.tags, to_iso(self.created_at)]
        if self.raw is not None:
            fields += [hashlib.sha256(self.raw).hexdigest(), documents.CONVERTER_VERSION]
        payload = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class Candidate:
    """An item seen by a scan. ``fingerprint`` (e.g. mtime and size) lets sync skip unchanged items
    without loading them; ``None`` means "always load and compare content hashes". ``cost`` is the
    work of chunking it relative to a text file (a document to convert costs more), so that a sync of
    a few dozen PDFs already uses the chunk helper processes."""

    source_id: str
    fingerprint: str | None
    load: Callable[[], SourceItem | None]
    cost: int = 1


@dataclass
class ScanReport:
    """Items a connector skipped, counted by reason (``symlink_escape``, ``binary``, ``too_large``,
    ``encrypted`` ...); ``named`` holds the first skipped items' (source_id, reason)."""

    skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    named: list[tuple[str, str]] = field(default_factory=list)

    def skip(self, reason: str, detail: str | None = None, *, item: str | None = None) -> None:
        self.skipped[reason] += 1
        if detail and len(self.warnings) < MAX_NAMED:
            self.warnings.append(_storable(detail))
        if item is not None and len(self.named) < MAX_NAMED:
            self.named.append((_storable(item), reason))


def _storable(text: str) -> str:
    """``text`` as valid UTF-8 (a lone surrogate from a broken item shown as ``\\udc80``), so the
    summary and the ``sources`` notes that name it can always be stored and printed."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@runtime_checkable
class Connector(Protocol):
    type: str  # "filesystem", "git", "script", or an extension's type
    name: str

    @property
    def label(self) -> str:  # "TYPE:NAME", the document's ``source``
        ...

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        """List every current item. Blocking; runs in a worker thread."""
        ...


# -- capabilities: what some connectors offer beyond ``Connector`` ---------------------------------


@runtime_checkable
class Configured(Protocol):
    """A connector made from a config table: ``config`` holds its settings (compared to notice a
    changed config file); a connector made in code has none."""

    config: Any


@runtime_checkable
class Scheduled(Protocol):
    """Settings with an interval sync (``sync_interval`` in seconds, ``None`` when off)."""

    @property
    def sync_seconds(self) -> float | None: ...


@runtime_checkable
class HealthReporting(Protocol):
    """A connector that can say whether it can run now and, if not, why (``sources`` shows it)."""

    def health(self) -> tuple[bool, str | None]: ...


@runtime_checkable
class SetAside(Protocol):
    """A connector that stands in for one that cannot run (an unset variable, a script that does
    not load): while ``unavailable``, ``sync all`` passes it by."""

    @property
    def unavailable(self) -> bool: ...


@dataclass
class PathScan:
    """What a ``PathScanning`` connector found at some paths: their ``candidates``, the paths they
    ``covered`` (stored documents there that it did not find are gone), or ``full``: scan it all."""

    candidates: list[Candidate] = field(default_factory=list)
    covered: list[str] = field(default_factory=list)
    full: bool = False


@runtime_checkable
class PathScanning(Protocol):
    """A connector that can scan some of its paths (what a watcher saw change) without a full scan."""

    def scan_paths(self, rel_paths: Iterable[str], report: ScanReport) -> PathScan: ...


@runtime_checkable
class Prefetching(Protocol):
    """A connector that can fetch items ahead of their ``load`` (a network source): before loading
    starts, the sync tells it which candidates it will load, in the order it loads them."""

    def prefetch(self, source_ids: list[str]) -> None: ...


@dataclass(frozen=True)
class WriteSettings:
    """Where the note tools may write into a source: its folder, the globs writes must match (None:
    anywhere), and whether a new note with a title or tags gets YAML front matter."""

    root: Path
    write_globs: list[str] | None
    front_matter: bool


@runtime_checkable
class Writable(Connector, Protocol):
    """A connector the note tools can write through (the filesystem connector): ``write_settings`` is
    None while its source is read-only. It scans single paths (``PathScanning``) and says why a file
    it holds is not indexed."""

    def write_settings(self) -> WriteSettings | None: ...

    def scan_paths(self, rel_paths: Iterable[str], report: ScanReport) -> PathScan: ...

    def unindexed_reason(self, rel_path: str) -> str: ...


def write_settings(connector: Connector) -> WriteSettings | None:
    """The connector's write settings: None when it cannot be written or is read-only."""
    return connector.write_settings() if isinstance(connector, Writable) else None


def sync_seconds(connector: Connector) -> float | None:
    """The connector's ``sync_interval`` in seconds (None: off or not configurable)."""
    settings = connector.config if isinstance(connector, Configured) else None
    return settings.sync_seconds if isinstance(settings, Scheduled) else None


def settings_of(connector: Connector) -> Any:
    """The connector's config settings, ``None`` for one made in code."""
    return connector.config if isinstance(connector, Configured) else None


def runnable(connector: Connector) -> bool:
    """False for a connector set aside (``SetAside``) that cannot run now."""
    return not (isinstance(connector, SetAside) and connector.unavailable)
