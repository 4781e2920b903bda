"""A Lua worker process: ``python -m context_harness.lua.worker``, started by ``lua/pool.py``.

It holds loaded scripts (``LocalScript``, keyed by the host's script key) and runs one request at a
time from its stdin: ``load``, ``call`` (a global function, optionally with the ``context`` table)
and ``eval`` (a metadata snippet). While a script runs, its ``context.search/get/sources`` calls
are sent to the host as ``("call", method, argument)`` and answered with ``("reply", ok, value)``;
host log records travel as ``("log", logger, level, message)``. Each request ends with
``("done", value)`` or ``("fail", error class name, message)``.

The host kills this process when a request outlives its deadline (a long C call the count hook
cannot interrupt), so nothing here needs to be interruptible. Stray output goes to stderr: the
pipe to the host is a duplicate of the original stdout.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections import OrderedDict
from typing import IO, Any

from context_harness.common.lineage import exit_with_parent
from context_harness.errors import ConfigError, HarnessError, Timeout
from context_harness.lua.engine import LocalScript, item_rows
from context_harness.lua.runtime import DEFAULT_MEMORY_LIMIT, HostError
from context_harness.lua.wire import receive, send

PARENT_CHECK_SECONDS = 1.0
MAX_SCRIPTS = 64  # loaded scripts kept per worker (least recently used dropped first)
MEMORY_EXIT = 86  # exit code: a request grew the process past its memory allowance
MEMORY_CHECK_SECONDS = 0.01
HOST_SLACK = 64 * 1024 * 1024  # allowance on top of the script's cap: Python's own transient use


class Link:
    """The worker's end of the pipe; ``active`` while a request runs (log records go to the host)."""

    def __init__(self, inp: IO[bytes], out: IO[bytes]) -> None:
        self.inp = inp
        self.out = out
        self.active = False
        self.lock = threading.Lock()  # one writer at a time, should a host function log from a thread

    def tell(self, message: object) -> None:
        with self.lock:
            send(self.out, message)

    def ask(self, method: str, argument: Any) -> Any:
        self.tell(("call", method, argument))
        reply = receive(self.inp)
        if reply[1]:
            return reply[2]
        kind, message = reply[2]
        if kind == "Timeout":
            raise Timeout(message)
        raise HostError(message)


class HostContext:
    """The ``ScriptContext`` a script sees in the worker: every call is answered by the host."""

    def __init__(self, link: Link) -> None:
        self.link = link

    def search(self, request: dict[str, Any]) -> Any:
        return self.link.ask("search", request)

    def get(self, id: str) -> Any:
        return self.link.ask("get", id)

    def sources(self) -> Any:
        return self.link.ask("sources", None)


class ForwardHandler(logging.Handler):
    """Log records become ``("log", ...)`` messages while a request runs; stderr otherwise."""

    def __init__(self, link: Link) -> None:
        super().__init__(logging.DEBUG)
        self.link = link

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + "".join(traceback.format_exception(*record.exc_info))
            if self.link.active:
                self.link.tell(("log", record.name, record.levelno, message))
            else:
                sys.stderr.write(f"{record.levelname} {record.name}: {message}\n")
        except Exception:  # pragma: no cover - logging must never break a run
            self.handleError(record)


def rss() -> int | None:
    """This process's resident memory in bytes (Linux ``/proc``), or None where unknown."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return None


PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class MemoryWatch:
    """The backstop behind the memory cap: while a request runs, the process may grow by at most
    twice the script's ``memory_limit`` plus ``HOST_SLACK`` (the Lua allocator enforces the cap on
    Lua data; host functions budget what they build, see ``Sandbox.host_room``). Past that, whatever
    allocates (Python, a C library), the process exits with ``MEMORY_EXIT`` and the host reports
    the script out of memory and starts a new worker."""

    def __init__(self) -> None:
        self.limit: int | None = None
        self.active = threading.Event()  # set while a request runs; the watcher sleeps otherwise
        if rss() is not None:
            threading.Thread(target=self._run, name="ctx-lua-memory", daemon=True).start()

    def start(self, memory_limit: int) -> None:
        now = rss()
        self.limit = None if now is None else now + 2 * memory_limit + HOST_SLACK
        self.active.set()

    def stop(self) -> None:
        self.active.clear()
        self.limit = None

    def _run(self) -> None:
        while True:
            self.active.wait()
            time.sleep(MEMORY_CHECK_SECONDS)
            limit = self.limit
            if limit is None:
                continue
            now = rss() or 0
            if now > limit:
                sys.stderr.write(f"Lua worker: {now >> 20} MB is past this request's {limit >> 20} MB; exiting\n")
                os._exit(MEMORY_EXIT)


class Worker:
    def __init__(self, link: Link) -> None:
        self.link = link
        self.scripts: OrderedDict[str, LocalScript] = OrderedDict()
        self.memory = MemoryWatch()

    def memory_limit(self, key: str, spec: dict[str, Any] | None) -> int:
        script = self.scripts.get(key)
        limit = script.memory_limit if script is not None else (spec or {}).get("memory_limit")
        return int(limit or DEFAULT_MEMORY_LIMIT)

    def script(self, op: str, key: str, spec: dict[str, Any] | None) -> LocalScript | None:
        script = self.scripts.get(key)
        if script is not None:
            self.scripts.move_to_end(key)
            return script
        if spec is None:
            return None
        spec = dict(spec)
        path = spec.pop("path")
        try:
            script = LocalScript(path, max_instances=1, **spec)
        except ConfigError as exc:
            if op == "load":
                raise
            raise spec["error_class"](exc.message) from None
        self.scripts[key] = script
        while len(self.scripts) > MAX_SCRIPTS:
            self.scripts.popitem(last=False)
        return script

    def handle(self, request: tuple[Any, ...]) -> tuple[Any, ...]:
        op, key, spec, meta = request[:4]
        logging.getLogger().setLevel(meta["log_level"])
        for name, value in meta["environ"].items():  # env.get reads what the host has now
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        script = self.script(op, key, spec)
        if script is None:
            return ("missing",)
        if op == "load":
            return ("done", None)
        if op == "eval":
            snippet, timeout, limit = request[4:7]
            return ("done", script.evaluate(snippet, timeout=timeout, limit=limit))
        path, args, timeout, with_context, items = request[4:9]
        context = HostContext(self.link) if with_context else None
        if items is None:
            return ("done", script.call_function(path, *args, context=context, timeout=timeout))
        max_nodes, max_bytes = items
        return ("done", script.call_function(
            path, *args, context=context, timeout=timeout,
            convert=lambda results: item_rows(results, max_nodes=max_nodes, max_bytes=max_bytes)))

    def serve(self) -> None:
        while True:
            try:
                request = receive(self.link.inp)
            except EOFError:
                return
            self.link.active = True
            try:
                self.memory.start(self.memory_limit(request[1], request[2]))
                reply = self.handle(request)
            except HarnessError as exc:
                reply = ("fail", type(exc).__name__, exc.message)
            except Exception:
                traceback.print_exc(file=sys.stderr)
                reply = ("fail", "InternalError", "the Lua worker failed (see the server log)")
            finally:
                self.memory.stop()
                self.link.active = False
            self.link.tell(reply)


def main() -> None:
    # Exit when the host is gone, even while a script is stuck in a C call (Lua runs without the
    # interpreter lock, so the watching thread keeps running).
    exit_with_parent(PARENT_CHECK_SECONDS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the host's to handle
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    link = Link(sys.stdin.buffer, out)
    root = logging.getLogger()
    root.handlers[:] = [ForwardHandler(link)]
    try:
        link.tell(("ready", os.getpid()))
        Worker(link).serve()
    except (BrokenPipeError, EOFError):  # the host went away: nothing left to do
        os._exit(0)


if __name__ == "__main__":
    main()
