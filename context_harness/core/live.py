"""The live index: keeps a serving knowledge base fresh without restarts.

- Each filesystem connector's root is **watched** (``watchfiles``' Rust ``notify`` backend: inotify,
  FSEvents, ReadDirectoryChanges). Events are gathered until the tree is quiet for ``STEP_MS`` (at
  most ``DEBOUNCE_MS``; a batch of ``BULK`` events or more keeps gathering while events come within
  ``BULK_QUIET_MS``), so an editor's atomic save or a ``git checkout`` of thousands of files
  arrives as one batch; the batch's paths are re-read by the connector's own rules
  (``Harness.sync_paths``: globs, excludes, nested ``.gitignore``, symlinks, size), a folder is
  re-scanned whole, and what is gone leaves the index. A changed ``.gitignore`` re-syncs the source.
- When a watcher cannot run (the OS watch limit is exhausted, the root is gone), that is logged once
  and shown in ``sources``; the source is **polled** instead (a full incremental sync every
  ``POLL_SECONDS``: unchanged fingerprints cost a ``stat``) and watched again once possible.
- Names that are not UTF-8 (a Latin-1 file from an old disk): ``watchfiles`` cannot decode them, and
  any event naming one, even a mere read of it, stops its OS watcher for good. So a folder holding
  such names is watched by a polling watcher of its own (``PAIR_POLL_MS``; it reports only real
  changes), the rest by OS events (``_Paired``). A folder whose own path is not UTF-8 cannot be
  watched at all (``watchfiles`` takes text): while a source has any, it is also synced in full every
  ``POLL_SECONDS`` (``watch_note``).
- A watcher that dies while watching (any exception from ``watchfiles``) is **restarted** at once,
  after a full incremental sync catches what its lost batch held; one that dies ``RESTARTS`` times
  within ``RESTART_WINDOW_SECONDS`` is polled instead, and ``sources`` says so.
- Connectors with a ``sync_interval`` (git: 10 minutes by default) are synced on that interval.
- A write that fails (a full disk, a read-only folder) is logged and **retried** by a full incremental
  sync of that source after a pause that doubles (2 s up to 5 minutes), so no change is lost.
- Chunks changed by any of these are **embedded in the background** right after the keyword update
  (``Harness.embed_new``), which never waits for them.

Every write goes through one Harness method (``sync_paths``, ``sync``), under its sync lock.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc

from context_harness import config as config_mod
from context_harness.config import Config
from context_harness.connectors.base import Connector, sync_seconds
from context_harness.connectors.filesystem import ALWAYS_SKIPPED_DIRS, FilesystemConnector
from context_harness.connectors.names import escape_name
from context_harness.core.activity import INTERVAL, OFF, POLLED, WATCHED, Activity
from context_harness.core.polling import ListingPoller
from context_harness.errors import HarnessError
from context_harness.models import EmbedSummary, SyncReport, SyncSummary

log = logging.getLogger(__name__)

STEP_MS = 100  # a batch ends after this long without a new event ...
DEBOUNCE_MS = 1_500  # ... or after this long in all
BULK = 200  # a batch this large is a bulk operation: gather until BULK_QUIET_MS pass without events
BULK_QUIET_MS = 300
BULK_MAX_MS = 10_000
CHECK_MS = 2_000  # how often an idle watcher checks that its root is still there
POLL_SECONDS = 10.0  # a polled source's full incremental sync, when it has no sync_interval
ROOT_WAIT_SECONDS = 1.0  # how often a missing root is looked for
RETRY_WATCH_SECONDS = 60.0  # how long a source stays polled before watching is tried again
RETRY_FIRST_SECONDS = 2.0  # a failed write (full disk, read-only folder) is retried after this, ...
RETRY_MAX_SECONDS = 300.0  # ... doubling up to this
RESTARTS = 10  # a watcher that dies this often within ...
RESTART_WINDOW_SECONDS = 60.0  # ... this long is given up for polling
PAIR_POLL_MS = 300  # how often the folders holding names that are not UTF-8 are polled ...
PAIR_STEP_MS = 200  # ... and checked for what that found, between waits for OS events
MAX_WATCH_PATH = 3000  # bytes of a folder path the watcher is given (PATH_MAX: 4096 on Linux, 1024 on macOS)

NotifyFactory = Callable[[list[str]], Any]
"""Makes a watcher of these paths (``watchfiles.RustNotify``-like: ``watch(...)``, ``close()``)."""


class LiveHost(Protocol):
    """What the live index (watchers, interval syncs, background embedding) needs of ``Harness``: its
    config, connectors and activity, and the syncs it starts; a protocol, so ``live.py`` stays below
    ``harness.py``."""

    config: Config
    connectors: list[Connector]
    activity: Activity

    async def sync(self, target: str = "all", *, embed: bool = True) -> SyncReport: ...

    async def sync_paths(self, label: str, rel_paths: list[str]) -> SyncSummary: ...

    async def embed_new(self) -> EmbedSummary | None: ...

    def reconfigured_connectors(self, config: Config) -> list[Connector]: ...


ADDED = 1  # watchfiles' Change.added


def rust_notify(paths: list[str]) -> Any:
    """A watcher of exactly the folders in ``paths``, each without its subfolders. The caller lists
    the folders (``folders``): watchfiles' recursive mode walks every file of the tree while holding
    the GIL, which stalled the server's event loop 1.2 s at start on 300,000 files."""
    from watchfiles._rust_notify import RustNotify

    return RustNotify(paths, False, False, 300, False, True)


def listing_poll(paths: list[str]) -> Any:
    """A polling watcher of the folders in ``paths`` (each without its subfolders): it compares what
    it lists every ``PAIR_POLL_MS``, so it reports real changes only, never a mere read."""
    return ListingPoller(paths, PAIR_POLL_MS / 1000)


class _Paired:
    """An OS-event watcher of most folders and a polling one of the folders holding names that are not
    UTF-8, behind one ``watch`` (as ``RustNotify``'s): waits for OS events ``PAIR_STEP_MS`` at a time,
    gathering what the polling watcher found in between."""

    def __init__(self, events: Any, polled: Any) -> None:
        self.events, self.polled = events, polled

    def watch(self, debounce_ms: int, step_ms: int, timeout_ms: int, stop: Any) -> set[tuple[int, str]] | str:
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            got = self.events.watch(debounce_ms, step_ms, min(PAIR_STEP_MS, timeout_ms), stop)
            more = self.polled.watch(1, 1, 1, stop)
            if "stop" in (got, more):
                return "stop"
            changes = (got if isinstance(got, set) else set()) | (more if isinstance(more, set) else set())
            if changes or time.monotonic() >= deadline:
                return changes or "timeout"

    def close(self) -> None:
        self.events.close()
        self.polled.close()


def watchable(path: str) -> bool:
    """Whether ``watchfiles`` can take ``path``: it must be valid UTF-8 text (a name with other bytes
    comes from ``os.scandir`` with surrogates, which the watcher refuses) and short enough for one
    system call (``MAX_WATCH_PATH``; the OS refuses longer paths)."""
    try:
        return len(path.encode("utf-8")) <= MAX_WATCH_PATH
    except UnicodeEncodeError:
        return False


def folders(top: str, data_dir: str, unwatchable: set[str] | None = None,
            odd: set[str] | None = None) -> set[str]:
    """``top`` and every folder under it that a scan could enter: not one of ``ALWAYS_SKIPPED_DIRS``
    nor the workspace's data folder; symlinked folders are followed once (by their real path).
    A folder whose path is not UTF-8 or too long (see ``watchable``) is left out, with all under it, and added
    to ``unwatchable``; a folder listed that holds such a name is also added to ``odd``. Walked in
    Python, so the event loop keeps turning meanwhile."""
    found: set[str] = set()
    seen: set[tuple[int, int]] = set()
    data = _identity(data_dir)
    stack = [top]
    while stack:
        folder = stack.pop()
        if not watchable(folder):
            if unwatchable is not None:
                unwatchable.add(folder)
            continue
        # A folder is known by its device and inode, not its real path: ``realpath`` of every folder
        # costs a look-up per path component, quadratic in depth (25 s for a 1,000-deep tree).
        identity = _identity(folder)
        if identity is None or identity in seen or identity == data:
            continue
        seen.add(identity)
        found.add(folder)
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if odd is not None and not watchable(entry.name):
                        odd.add(folder)
                    try:
                        if entry.is_dir() and entry.name not in ALWAYS_SKIPPED_DIRS:
                            stack.append(entry.path)
                    except OSError:
                        continue
        except OSError:  # gone or unreadable meanwhile: nothing under it to watch
            continue
    return found


def changed(summary: SyncSummary | SyncReport) -> int:
    if isinstance(summary, SyncReport):
        return summary.total("added") + summary.total("updated") + summary.total("deleted")
    return summary.added + summary.updated + summary.deleted


def _config_stamp(path: Path | None) -> tuple[int, int] | None:
    try:
        st = os.stat(path) if path is not None else None
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if st is not None else None


class WatcherDied(Exception):
    """A running watcher raised (``watchfiles`` gave up on an event, e.g. a path that is not UTF-8):
    its batch is lost, the watcher is useless, the source is fine."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"{cause.__class__.__name__}: {cause}")


class _StopEvent:
    """What ``RustNotify.watch`` polls to stop early (set when the watching task is cancelled)."""

    def __init__(self) -> None:
        self.flag = False

    def is_set(self) -> bool:
        return self.flag


class LiveIndex:
    """The live index of one serving Harness, in the serving task group."""

    def __init__(self, harness: LiveHost, task_group: anyio.abc.TaskGroup, *,
                 notify: NotifyFactory = rust_notify, watch: bool = True, poll: NotifyFactory = listing_poll) -> None:
        self.harness = harness
        self.task_group = task_group
        self.notify = notify
        self.poll = poll
        self.watch = watch
        self._embed_wanted = anyio.Event()
        self._stop = _StopEvent()  # shared by every watcher of this live index
        self._told: dict[str, str] = {}  # label -> the fallback reason already logged
        self._generation: dict[str, int] = {}  # label -> bumped when the config changes the connector
        self._config_stamp = _config_stamp(harness.config.source_path)
        self._data_dir = os.path.realpath(harness.config.data_dir)
        self._backoff: dict[str, float] = {}  # label -> the pause before the next retry of a failed write
        self._retry_pending: set[str] = set()
        self._deaths: dict[str, list[float]] = {}  # label -> when its watchers died (monotonic), recent only
        self._unwatchable: dict[str, set[str]] = {}  # root -> folders under it that cannot be watched
        self._odd: dict[str, set[str]] = {}  # root -> folders under it holding such names (polled)

    def start(self) -> None:
        if self.harness.config.embedding.provider != "disabled":
            self.task_group.start_soon(self._embed_follow)
        if self.harness.config.source_path is not None:
            self.task_group.start_soon(self._follow_config)
        for connector in self.harness.connectors:
            if self.watch and isinstance(connector, FilesystemConnector):
                self.task_group.start_soon(self._keep_watched, connector.label)
            else:
                self.harness.activity.set_watch(connector.label, INTERVAL if sync_seconds(connector) else OFF)
            self.task_group.start_soon(self._every, connector.label)

    def current(self, label: str) -> Connector | None:
        return next((c for c in self.harness.connectors if c.label == label), None)

    def stop(self) -> None:
        """Make every watcher thread return within ``STEP_MS`` (before the task group is cancelled,
        which waits for them)."""
        self._stop.flag = True

    # -- embeddings --------------------------------------------------------------------------

    def embed_soon(self) -> None:
        """Embed the chunks the last update left pending, in the background (coalesced)."""
        self._embed_wanted.set()

    async def _embed_follow(self) -> None:
        while True:
            await self._embed_wanted.wait()
            self._embed_wanted = anyio.Event()
            summary = await self.harness.embed_new()
            if summary is not None and summary.embedded:
                log.info("live: embedded %d chunks in %.2fs", summary.embedded, summary.seconds)

    # -- syncs -------------------------------------------------------------------------------

    async def sync_source(self, connector: Connector, why: str) -> None:
        """A full incremental sync of one source (no embedding: that follows in the background)."""
        try:
            report = await self.harness.sync(connector.label, embed=False)
        except HarnessError as exc:
            log.warning("%s: %s sync failed: %s%s", connector.label, why, exc.message, self._failed(connector.label))
            return
        except Exception:
            log.exception("%s: %s sync failed%s", connector.label, why, self._failed(connector.label))
            return
        self._backoff.pop(connector.label, None)
        if changed(report):
            log.info("%s: %s sync: %d documents changed", connector.label, why, changed(report))
            self.embed_soon()

    async def sync_paths(self, connector: Connector, rel_paths: list[str]) -> None:
        started = time.perf_counter()
        try:
            summary = await self.harness.sync_paths(connector.label, rel_paths)
        except HarnessError as exc:
            log.warning("%s: live update failed: %s%s", connector.label, exc.message, self._failed(connector.label))
            return
        except Exception:
            log.exception("%s: live update failed%s", connector.label, self._failed(connector.label))
            return
        log.info("%s: live update of %d paths: %d added, %d updated, %d deleted in %.3fs (pass %d)",
                 connector.label, len(rel_paths), summary.added, summary.updated, summary.deleted,
                 time.perf_counter() - started, self.harness.activity.of(connector.label).passes)
        if changed(summary):
            self.embed_soon()

    def _failed(self, label: str) -> str:
        """A write of ``label`` failed (a full disk, a read-only folder, ...): a full incremental sync
        retries it after a pause that doubles up to ``RETRY_MAX_SECONDS``, so nothing the watcher saw
        is lost and nothing spins. Returns the note for the log line."""
        delay = self._backoff.get(label, RETRY_FIRST_SECONDS)
        self._backoff[label] = min(delay * 2, RETRY_MAX_SECONDS)
        if label not in self._retry_pending:
            self._retry_pending.add(label)
            self.task_group.start_soon(self._retry, label, delay)
        return f" (trying again in {delay:.0f} s)"

    async def _retry(self, label: str, delay: float) -> None:
        await anyio.sleep(delay)
        self._retry_pending.discard(label)
        connector = self.current(label)
        if connector is not None:
            await self.sync_source(connector, "retried")

    async def _every(self, label: str) -> None:
        """``sync_interval``: a full incremental sync of the source every interval (as configured now)."""
        while True:
            connector = self.current(label)
            seconds = sync_seconds(connector) if connector is not None else None
            if connector is None or seconds is None:
                await anyio.sleep(CHECK_MS / 1000)
                continue
            await anyio.sleep(seconds)
            await self.sync_source(connector, "interval")

    async def _follow_config(self) -> None:
        """A changed config file that changes a connector's settings: re-sync that source with them
        (a watched one is watched anew). Sources added or removed need a restart."""
        path = self.harness.config.source_path
        assert path is not None
        while True:
            await anyio.sleep(CHECK_MS / 1000)
            stamp = _config_stamp(path)
            if stamp is None or stamp == self._config_stamp:
                continue
            self._config_stamp = stamp
            try:
                fresh = await anyio.to_thread.run_sync(config_mod.load_file, path)
                changed = self.harness.reconfigured_connectors(fresh)
            except HarnessError as exc:
                log.warning("config changed but cannot be loaded; sources keep their settings: %s", exc.message)
                continue
            for connector in changed:
                log.info("%s: settings changed in the config; syncing it again", connector.label)
                self._generation[connector.label] = self._generation.get(connector.label, 0) + 1
                if not (self.watch and isinstance(connector, FilesystemConnector)):
                    self.harness.activity.set_watch(connector.label, INTERVAL if sync_seconds(connector) else OFF)
                    await self.sync_source(connector, "config")

    # -- watching ----------------------------------------------------------------------------

    async def _keep_watched(self, label: str) -> None:
        """Watch the root; when that is impossible, poll it and try watching again later."""
        resync = False
        while True:
            connector = self.current(label)
            if not isinstance(connector, FilesystemConnector):
                return
            if not connector.root.is_dir():
                self._fall_back(label, f"root folder {connector.root} does not exist; waiting for it")
                while not connector.root.is_dir() and self.current(label) is connector:
                    await anyio.sleep(ROOT_WAIT_SECONDS)
                resync = True
                continue
            try:
                await self._watch(connector, resync)
            except WatcherDied as exc:
                if self._may_restart(label):
                    log.warning("%s: the watcher stopped (%s); watching again after a full sync", label, exc)
                else:
                    self._fall_back(label, f"the watcher stopped {RESTARTS} times within "
                                    f"{RESTART_WINDOW_SECONDS:.0f} s (last: {exc})")
                    await self._poll(connector, RETRY_WATCH_SECONDS)
            except Exception as exc:  # the OS watch limit, permissions
                self._fall_back(label, self._reason(exc))
                await self._poll(connector, RETRY_WATCH_SECONDS)
            resync = True

    def _may_restart(self, label: str) -> bool:
        """Record a watcher's death; whether it may be restarted at once (fewer than ``RESTARTS``
        deaths within ``RESTART_WINDOW_SECONDS``) rather than polled."""
        now = time.monotonic()
        deaths = [t for t in self._deaths.get(label, []) if now - t < RESTART_WINDOW_SECONDS] + [now]
        self._deaths[label] = deaths
        return len(deaths) < RESTARTS

    def _fall_back(self, label: str, reason: str) -> None:
        self.harness.activity.set_watch(label, POLLED, reason)
        if self._told.get(label) != reason:
            self._told[label] = reason
            log.warning("%s: not watched (%s); polling it instead", label, reason)

    @staticmethod
    def _reason(exc: Exception) -> str:
        text = str(exc) or exc.__class__.__name__
        if getattr(exc, "errno", None) == errno.ENOSPC or "limit" in text.lower():
            return (f"the OS limit of file watches is reached ({text}); raise it, e.g. "
                    "`sysctl fs.inotify.max_user_watches=524288`")
        return f"cannot watch: {text}"

    async def _poll(self, connector: FilesystemConnector, duration: float) -> None:
        """Full incremental syncs every poll interval for ``duration`` s, or until the root is gone."""
        every = sync_seconds(connector) or POLL_SECONDS
        until = time.monotonic() + duration
        while time.monotonic() < until:
            await anyio.sleep(min(every, max(until - time.monotonic(), 0.0)))
            if not connector.root.is_dir() or self.current(connector.label) is not connector:
                return
            await self.sync_source(connector, "poll")

    async def _watch(self, connector: FilesystemConnector, resync: bool) -> None:
        """Watch the root until it disappears (or is replaced); ``OSError`` when it cannot be watched.
        ``resync``: sync the whole source once the watcher runs (changes made while unwatched).

        Each folder is watched on its own (``rust_notify``). A batch that shows new folders (made,
        moved or copied in) opens a watcher over the grown set before the batch is applied; the
        batch re-scans those folders whole, so files made in them before their watch began are
        found, and the old watcher's last events are drained into the batch."""
        root = str(connector.root)
        identity = _identity(root)
        generation = self._generation.get(connector.label, 0)
        watcher, watched = await anyio.to_thread.run_sync(self._open_watcher, root, None)
        try:
            self._say_watched(connector.label, root)
            if self._told.pop(connector.label, None) is not None:
                log.warning("%s: watched again", connector.label)
            if resync:
                await self.sync_source(connector, "catch-up")
            polled_at = time.monotonic()
            while True:
                raw = await self._next_batch(watcher)
                if raw == "stop":
                    return
                if isinstance(raw, set) and raw:
                    grown = await anyio.to_thread.run_sync(self._grown, root, raw, watched)
                    if grown is not None:
                        fresh, now_watched = await anyio.to_thread.run_sync(self._open_watcher, root, grown)
                        last = await self._drain(watcher)
                        watcher.close()
                        watcher, watched = fresh, now_watched
                        self._say_watched(connector.label, root)
                        if isinstance(last, set):
                            raw |= last
                    await self._apply(connector, root, raw)
                if self._unwatchable.get(root) and time.monotonic() - polled_at >= POLL_SECONDS:
                    polled_at = time.monotonic()
                    await self.sync_source(connector, "poll of unwatchable folders")
                if _identity(root) != identity or self._generation.get(connector.label, 0) != generation:
                    return
        finally:
            watcher.close()

    def _say_watched(self, label: str, root: str) -> None:
        """``sources``: watched, with a note when some folders cannot be (names that are not UTF-8)."""
        skipped = self._unwatchable.get(root)
        note = None
        if skipped:
            example = escape_name(os.path.relpath(min(skipped), root).replace(os.sep, "/"))
            example = example if len(example) <= 80 else example[:38] + "…" + example[-38:]
            note = (f"{len(skipped)} folder(s) whose paths are not UTF-8 or too long cannot be watched "
                    f"(e.g. {example}); the source is also synced in full every {POLL_SECONDS:.0f} s")
        self.harness.activity.set_watch(label, WATCHED, note)

    async def _drain(self, watcher: Any) -> set[tuple[int, str]] | str:
        """The events a watcher about to be replaced still holds."""
        try:
            return await anyio.to_thread.run_sync(watcher.watch, 1, 1, 1, self._stop)
        except Exception as exc:
            raise WatcherDied(exc) from exc

    def _open_watcher(self, root: str, wanted: set[str] | None) -> tuple[Any, set[str]]:
        """A watcher of ``wanted`` (all of the root's folders when None), and the folders it watches.
        A folder removed before its watch is set up makes the folders be listed again (three tries)."""
        for attempt in range(3):
            if wanted is None or attempt:
                skipped: set[str] = set()
                odd: set[str] = set()
                wanted = folders(root, self._data_dir, skipped, odd)
                self._unwatchable[root], self._odd[root] = skipped, odd
            try:
                return self._watcher(sorted(wanted - self._odd.get(root, set())),
                                     sorted(wanted & self._odd.get(root, set()))), wanted
            except FileNotFoundError:
                if attempt == 2 or not os.path.isdir(root):
                    raise
        raise AssertionError("unreachable")

    def _watcher(self, plain: list[str], odd: list[str]) -> Any:
        """One watcher of ``plain`` folders (OS events) and ``odd`` ones (polled: see ``_Paired``)."""
        if not odd:
            return self.notify(plain)
        polled = self.poll(odd)
        if not plain:
            return polled
        try:
            return _Paired(self.notify(plain), polled)
        except BaseException:
            polled.close()
            raise

    def _grown(self, root: str, raw: set[tuple[int, str]], watched: set[str]) -> set[str] | None:
        """The folders to watch after ``raw`` when it added folders (made, moved or copied in, or
        made again under a watched name), None when it added none: the watched folders still there
        plus every folder at or under an added one."""
        new = [path for change, path in raw
               if change == ADDED and os.path.dirname(path) in watched and os.path.isdir(path)
               and os.path.basename(path) not in ALWAYS_SKIPPED_DIRS]
        if not new:
            return None
        kept = {folder for folder in watched if os.path.isdir(folder)}
        skipped, odd = self._unwatchable.setdefault(root, set()), self._odd.setdefault(root, set())
        for path in new:
            kept |= folders(path, self._data_dir, skipped, odd)
        return kept

    async def _next_batch(self, watcher: Any) -> set[tuple[int, str]] | str:
        """The next batch of events (``"timeout"`` after ``CHECK_MS`` without any, ``"stop"``). A batch
        of ``BULK`` events or more is a bulk operation under way (a checkout, a copy): it grows while
        events keep coming within ``BULK_QUIET_MS``, for up to ``BULK_MAX_MS``, so that it is applied
        in one pass rather than in one per ``DEBOUNCE_MS``."""
        stop = self._stop
        try:
            raw = await anyio.to_thread.run_sync(watcher.watch, DEBOUNCE_MS, STEP_MS, CHECK_MS, stop)
            if not isinstance(raw, set) or len(raw) < BULK:
                return raw
            deadline = time.monotonic() + BULK_MAX_MS / 1000
            while time.monotonic() < deadline:
                more = await anyio.to_thread.run_sync(watcher.watch, DEBOUNCE_MS, BULK_QUIET_MS, BULK_QUIET_MS, stop)
                if more == "stop":
                    return more
                if not isinstance(more, set) or not more:
                    break
                raw |= more
            return raw
        except Exception as exc:  # this watcher only: the others of this live index go on
            raise WatcherDied(exc) from exc
        except BaseException:  # cancelled: every watcher thread returns (the flag is shared)
            stop.flag = True
            raise

    async def _apply(self, connector: FilesystemConnector, root: str, raw: Iterable[tuple[int, str]]) -> None:
        rel_paths, full = self.relevant(root, (path for _, path in raw))
        if full:
            await self.sync_source(connector, "gitignore")
        elif rel_paths:
            await self.sync_paths(connector, sorted(rel_paths))

    def relevant(self, root: str, paths: Iterable[str]) -> tuple[set[str], bool]:
        """The changed paths relative to ``root`` that a scan could list (not inside ``.git`` and the
        like, nor the workspace's own data folder), as the OS names them (``scan_paths`` escapes them
        into source ids, as a full scan does), and whether a ``.gitignore`` changed."""
        prefix = root.rstrip(os.sep) + os.sep
        data = os.path.relpath(self._data_dir, os.path.realpath(root)).replace(os.sep, "/")
        out: set[str] = set()
        full = False
        for path in paths:
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix):].split(os.sep)
            rel = "/".join(parts)
            if rel == data or rel.startswith(data + "/") or any(part in ALWAYS_SKIPPED_DIRS for part in parts):
                continue
            if parts[-1] == ".gitignore":
                full = True
            out.add(rel)
        return out, full


def _identity(root: str) -> tuple[int, int] | None:
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


__all__ = ["LiveIndex", "rust_notify", "sync_seconds"]
