"""The processes that started this one, and whether they are still there (issue 49: no orphans).

A stdio server ends when its stdin ends. But a client that dies while another process holds the
other end of that pipe (a helper the client started, a terminal multiplexer) never closes it, and
the server would run for good. So a serving process records, as it starts, who started it:
``Lineage.of(parent)`` follows the parent and, while that is a launcher which stays alive between
the client and the server, the launcher's parent, up to the client. Launchers are ``uv``/``uvx``,
``pipx``, ``npx``/``npm``/``pnpm``/``yarn``/``bun`` (as programs or as scripts under node, python or
bun) and shells running ``-c`` or a script (a wrapper that does not ``exec``); a client written in node
or python is a client. ``Lineage.gone()`` then says whether any of them has died since:

- the parent: ``os.getppid()`` changes as soon as it dies (the orphan is handed to init or to a
  subreaper); one system call, on every Unix.
- above it, on Linux: each launcher's ``/proc/PID/stat`` must still name the same parent, and the
  launcher must have the start time it had (a reused pid is another process).
- above it, elsewhere (macOS): each recorded ancestor must still exist (``kill(pid, 0)``). Launchers
  are told by ``ps`` once, at start. A pid reused within the second between two checks goes unseen.

``ParentWatch`` checks every ``interval`` seconds in a daemon thread and calls ``on_gone`` once with
the reason; a process that then has not ended ``backstop`` seconds later is ended (``os._exit``).
``exit_with_parent`` is the small form for helper processes (Lua workers, chunking helpers): exit at
once when the parent is gone, even while a long call holds the main thread. Not PR_SET_PDEATHSIG: it
fires when the parent THREAD that started the child ends (hosts start workers from short-lived
threads), and it cannot see past a launcher. Windows has no reparenting: nothing is watched there.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

INTERVAL = 1.0  # seconds between checks
BACKSTOP = 60.0  # after on_gone: the longest a clean shutdown may take before the process is ended
MAX_LAUNCHERS = 4  # launchers followed up from the parent (npx -> sh -c -> uv, say)
LAUNCHERS = frozenset({"uv", "uvx", "pipx", "npx", "npm", "pnpm", "pnpx", "yarn", "bunx"})
INTERPRETERS = ("node", "nodejs", "python", "bun", "deno")  # a launcher may be a script these run
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"})
SUFFIXES = (".exe", ".js", ".cjs", ".mjs", ".py", "-cli")


@dataclass(frozen=True)
class Process:
    """What is known of a process: its pid, its parent's, its start time (Linux) and its arguments."""

    pid: int
    parent: int
    started: str | None
    argv: tuple[str, ...]


def program(word: str) -> str:
    """The program a command word names: ``/usr/lib/node_modules/npm/bin/npx-cli.js`` -> ``npx``."""
    name = word.replace("\\", "/").rsplit("/", 1)[-1].lstrip("-").lower()
    for suffix in SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def is_launcher(argv: tuple[str, ...] | list[str]) -> bool:
    """Whether a process with these arguments is a launcher that stays alive while what it started
    runs, so its own parent is the one to watch (see the module docstring)."""
    if not argv:
        return False
    first = program(argv[0])
    if first in LAUNCHERS:
        return True
    if first in SHELLS:  # running a command (-c) or a script, not a shell a person types in
        options = [arg for arg in argv[1:] if arg.startswith("-")]
        return len(options) < len(argv) - 1 or any(not arg.startswith("--") and "c" in arg for arg in options)
    if first.startswith(INTERPRETERS) and len(argv) > 1:
        return program(_script(argv)) in LAUNCHERS
    return False


def _script(argv: tuple[str, ...] | list[str]) -> str:
    """What an interpreter runs: its script, or the module after ``-m`` (``python -m uv``)."""
    return argv[2] if argv[1] == "-m" and len(argv) > 2 else argv[1]


# -- reading the process table ------------------------------------------------------------------------

def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the name (state, ppid, ...), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()  # the name before it may hold spaces and parentheses


def _linux(pid: int) -> Process | None:
    fields = _stat_fields(pid)
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    if fields is None:
        return None
    words = tuple(part.decode(errors="replace") for part in argv.split(b"\0") if part)
    if len(words) == 1 and " " in words[0]:  # a process that set its title (npm: "npm exec pkg")
        words = tuple(words[0].split())
    return Process(pid, int(fields[1]), fields[19].decode(), words)


def _ps(pid: int) -> Process | None:
    try:
        out = subprocess.run(["ps", "-o", "ppid=", "-o", "args=", "-p", str(pid)], capture_output=True, text=True,
                             timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    parent, _, args = out.partition(" ")
    if not parent.isdigit():
        return None
    return Process(pid, int(parent), None, tuple(args.split()))


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time) of a running process on Linux; None once it is gone."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in (b"Z", b"X"):  # gone, or exited and not yet reaped
        return None
    return int(fields[1]), fields[19].decode()


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        return True
    return True


def describe(process: Process | None, pid: int) -> str:
    """``uv (pid 12)``: the program a process runs (a launcher's script rather than its interpreter)."""
    if process is None or not process.argv:
        return f"pid {pid}"
    name = program(process.argv[0])
    if name.startswith(INTERPRETERS) and len(process.argv) > 1 and program(_script(process.argv)) in LAUNCHERS:
        name = program(_script(process.argv))
    return f"{name} (pid {pid})"


# -- the lineage --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lineage:
    """This process's parent and the launchers above it (``launchers[i]`` is a launcher whose parent is
    the next one, or the client at the end); see the module docstring for how each is checked."""

    parent: int
    launchers: tuple[Process, ...]
    client: str  # who started us, for messages: "claude (pid 12) through uv (pid 34)"

    @classmethod
    def of(cls, parent: int) -> Lineage | None:
        """The lineage of this process, whose parent was ``parent`` when it started (``os.getppid()``
        then); None when there is nothing to watch: Windows, or a parent that is init itself."""
        if sys.platform == "win32" or parent <= 1:
            return None
        read = _linux if sys.platform.startswith("linux") else _ps
        launchers: list[Process] = []
        current = read(parent)
        while (current is not None and current.parent > 1 and len(launchers) < MAX_LAUNCHERS
               and is_launcher(current.argv)):
            launchers.append(current)
            current = read(current.parent)
        top = launchers[-1].parent if launchers else parent  # the client: the one process not a launcher
        names = [describe(current, top)] + [describe(p, p.pid) for p in reversed(launchers)]
        return cls(parent, tuple(launchers), " through ".join(names))

    def gone(self) -> str | None:
        """A sentence saying who is gone, or None while all of them live."""
        if os.getppid() != self.parent:
            return f"the process that started this one ({self.client}) is gone"
        for launcher in self.launchers:
            if launcher.started is not None:  # Linux: same process, same parent
                now = _stat(launcher.pid)
                if now is None or now[1] != launcher.started:
                    return f"the launcher {describe(launcher, launcher.pid)} is gone"
                if now[0] != launcher.parent:
                    return f"the process that started this one ({self.client}) is gone"
            elif not _exists(launcher.parent):
                return f"the process that started this one ({self.client}) is gone"
        return None


class ParentWatch:
    """Checks a ``Lineage`` every ``interval`` s in a daemon thread; ``on_gone(reason)`` once when it
    is gone, then ``os._exit(1)`` if the process still runs ``backstop`` s later. ``stop()`` ends the
    checks (not a backstop already counting)."""

    def __init__(self, parent: int, on_gone: Callable[[str], None], *, interval: float = INTERVAL,
                 backstop: float = BACKSTOP) -> None:
        self.parent = parent
        self.on_gone = on_gone
        self.interval = interval
        self.backstop = backstop
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ctx-parent-watch", daemon=True)
        self.lineage: Lineage | None = None

    def start(self) -> ParentWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        self.lineage = Lineage.of(self.parent)
        if self.lineage is None:
            log.debug("no parent to watch (started by init, or on Windows)")
            return
        log.debug("watching the client: %s", self.lineage.client)
        while not self._stop.wait(self.interval):
            reason = self.lineage.gone()
            if reason is not None:
                break
        else:
            return
        log.warning("%s: shutting down", reason)
        backstop = threading.Timer(self.backstop, self._end)  # armed first: on_gone may wait for a stuck loop
        backstop.daemon = True
        backstop.start()
        self.on_gone(reason)

    def _end(self) -> None:
        log.error("still running %.0f s after the client went: exiting now", self.backstop)
        os._exit(1)


@contextmanager
def watching(enabled: bool, parent: int | None, on_gone: Callable[[str], None]) -> Iterator[ParentWatch | None]:
    """A ``ParentWatch`` of ``parent`` (default: this process's parent now) for the block, when ``enabled``."""
    if not enabled:
        yield None
        return
    watch = ParentWatch(os.getppid() if parent is None else parent, on_gone).start()
    try:
        yield watch
    finally:
        watch.stop()


def exit_with_parent(interval: float = INTERVAL) -> None:
    """In a helper process: exit (``os._exit(1)``) as soon as its parent is gone, checked every
    ``interval`` s in a daemon thread, whatever the main thread is doing."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    if sys.platform != "win32":
        threading.Thread(target=watch, name="ctx-parent-watch", daemon=True).start()


__all__ = ["BACKSTOP", "INTERVAL", "Lineage", "ParentWatch", "Process", "exit_with_parent", "is_launcher", "program",
           "watching"]
