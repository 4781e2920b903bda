"""Supervised Lua worker processes: a small warm pool shared by every script in this process.

Each worker (``python -m context_harness.lua.worker``) runs one request at a time. The caller's
thread sends the request, answers the script's ``context.*`` calls and forwards its log records
until the reply arrives, but never past the request's kill time: then the worker is killed
(SIGKILL; a long C call such as a backtracking ``string.find`` cannot be interrupted any other
way) and ``Killed`` is raised. A worker that dies or garbles the pipe raises ``Crashed``. Either
way the pool forgets that worker and starts a replacement in the background.
"""

from __future__ import annotations

import atexit
import dataclasses
import datetime as dt
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from context_harness.errors import HarnessError
from context_harness.lua.wire import Expired, Reader, frame

log = logging.getLogger(__name__)

MAX_WORKERS = 8  # busy at once; callers beyond wait for one to become free
WARM = 2  # idle workers kept ready
MEMORY_EXIT = 86  # a worker's exit code when a request grew it past its allowance (``worker.MemoryWatch``)
START_TIMEOUT = 30.0  # a new worker must say it is ready within this


class Killed(Exception):
    """The request outlived its kill time; the worker was killed."""


class Crashed(Exception):
    """The worker died or broke the protocol; ``message`` says how."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Busy(Exception):
    """No worker became free before the deadline."""


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


class WorkerProcess:
    """One worker process and the host's end of its pipes."""

    def __init__(self) -> None:
        env = dict(os.environ)
        paths = [_package_root()] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "context_harness.lua.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, close_fds=True, env=env)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.reader = Reader(self.process.stdout.fileno())
        self.loaded: set[str] = set()
        began = time.monotonic()
        try:
            hello = self.reader.message(time.monotonic() + START_TIMEOUT)
        except (Expired, EOFError, OSError, pickle.UnpicklingError) as exc:
            self.kill()
            raise Crashed(f"a Lua worker process did not start ({type(exc).__name__})") from None
        if not (isinstance(hello, tuple) and hello[:1] == ("ready",)):
            self.kill()
            raise Crashed("a Lua worker process did not start (unexpected greeting)")
        self.start_seconds = time.monotonic() - began  # until its first request, then 0

    def send(self, message: object) -> None:
        try:
            self.stdin.write(frame(message))
            self.stdin.flush()
        except (OSError, ValueError):
            raise Crashed(self._stopped()) from None

    def exchange(self, request: tuple[Any, ...], *, kill_at: float, context: Any) -> tuple[Any, ...]:
        """Send ``request`` and serve the worker until its final message; ``Killed`` at ``kill_at``."""
        self.send(request)
        while True:
            try:
                message = self.reader.message(kill_at)
            except Expired:
                self.kill()
                raise Killed() from None
            except (EOFError, OSError, pickle.UnpicklingError):
                raise Crashed(self._stopped()) from None
            if not isinstance(message, tuple) or not message:
                self.kill()
                raise Crashed("its Lua worker process sent a malformed message")
            tag = message[0]
            if tag == "call" and len(message) == 3:
                self.send(("reply", *_answer(context, message[1], message[2])))
            elif tag == "log" and len(message) == 4:
                logging.getLogger(str(message[1])).log(int(message[2]), "%s", message[3])
            else:
                return message

    def _stopped(self) -> str:
        self.kill()
        code = self.process.returncode
        if code == MEMORY_EXIT:
            return ("ran out of memory: its Lua worker process grew past what the script's memory limit "
                    "allows (set `memory_limit` in its config to allow more)")
        return f"its Lua worker process stopped unexpectedly (exit code {code})"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def close(self) -> None:
        try:
            self.stdin.close()
            self.process.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


def _answer(context: Any, method: Any, argument: Any) -> tuple[bool, Any]:
    """Run a script's ``context.<method>`` call here, in the host: ``(True, data)`` or
    ``(False, (error class name, message))``."""
    if context is None or method not in ("search", "get", "sources"):
        return False, ("HostError", "not available here (no knowledge base is attached)")
    try:
        value = context.sources() if method == "sources" else getattr(context, method)(argument)
        return True, plain(value)
    except HarnessError as exc:
        return False, (type(exc).__name__, exc.message)
    except Exception as exc:
        log.exception("a Lua script's context.%s call failed", method)
        return False, ("HostError", f"failed unexpectedly ({type(exc).__name__}); the server log has the details")


def plain(obj: Any) -> Any:
    """Python data -> only dicts, lists, strings, bytes, numbers, booleans and None."""
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return obj
    if isinstance(obj, Mapping):
        return {k if isinstance(k, (str, int, float, bytes)) else str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [plain(v) for v in obj]
    if isinstance(obj, (dt.datetime, dt.date)):
        return obj.isoformat()
    if hasattr(obj, "model_dump"):
        return plain(obj.model_dump(mode="json"))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return plain(dataclasses.asdict(obj))
    return str(obj)


class WorkerPool:
    """Up to ``max_workers`` workers busy at once; ``warm`` idle ones kept ready."""

    def __init__(self, max_workers: int = MAX_WORKERS, warm: int = WARM) -> None:
        self.max_workers = max_workers
        self.warm = warm
        self._cond = threading.Condition()
        self._idle: list[WorkerProcess] = []
        self._count = 0  # workers alive or starting
        self._spares = 0  # workers starting in the background (``_replace``)
        self._busy: set[WorkerProcess] = set()
        self._closed = False

    def busy_pids(self) -> list[int]:
        """Process ids of the workers running a request now (for diagnostics and tests)."""
        with self._cond:
            return [worker.process.pid for worker in self._busy]

    def idle_count(self) -> int:
        """Workers ready for a request now (for diagnostics and tests)."""
        with self._cond:
            return len(self._idle)

    def acquire(self, until: float) -> WorkerProcess:
        with self._cond:
            while True:
                if self._idle:
                    worker = self._idle.pop()
                    self._busy.add(worker)
                    self._top_up()
                    return worker
                left = until - time.monotonic()
                if self._count < self.max_workers and not (self._spares and left > 0):
                    self._count += 1
                    break
                if left <= 0:
                    raise Busy()
                self._cond.wait(left)  # a worker is released, or a spare already starting is ready
        try:
            worker = WorkerProcess()
        except BaseException:
            self._forget()
            raise
        with self._cond:
            self._busy.add(worker)
        return worker

    def _top_up(self) -> None:
        """(Lock held.) Start a spare in the background when the idle ones run out while workers are
        busy, so the next call (another tool's, say) finds one ready instead of waiting for a start."""
        if not self._closed and not self._idle and self._count < self.max_workers:
            threading.Thread(target=self._replace, name="ctx-lua-worker-start", daemon=True).start()

    def release(self, worker: WorkerProcess) -> None:
        with self._cond:
            self._busy.discard(worker)
            if not self._closed and len(self._idle) < self.warm:
                self._idle.append(worker)
                self._cond.notify()
                return
        worker.close()
        self._forget()

    def discard(self, worker: WorkerProcess) -> None:
        """Forget a killed or crashed worker and start a replacement in the background."""
        worker.kill()
        with self._cond:
            self._busy.discard(worker)
        self._forget()
        threading.Thread(target=self._replace, name="ctx-lua-worker-start", daemon=True).start()

    def _forget(self) -> None:
        with self._cond:
            self._count -= 1
            self._cond.notify_all()

    def _replace(self) -> None:
        with self._cond:
            if self._closed or len(self._idle) >= self.warm or self._count >= self.max_workers:
                return
            self._count += 1
            self._spares += 1
        try:
            worker = WorkerProcess()
        except (Crashed, OSError) as exc:
            log.warning("could not start a Lua worker process: %s", exc)
            with self._cond:
                self._spares -= 1
            self._forget()
            return
        worker.start_seconds = 0.0  # started in the background: no caller waited for it
        with self._cond:
            self._spares -= 1
            if not self._closed and len(self._idle) < self.warm:
                self._idle.append(worker)
                self._cond.notify_all()  # one takes it; the others, no spare coming now, start their own
                return
        worker.close()
        self._forget()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()
            self._forget()


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()


def shared_pool() -> WorkerPool:
    """The process-wide pool, created on first use and closed at exit."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = WorkerPool()
            atexit.register(_POOL.close)
        return _POOL
