"""No orphaned servers (issue 49): a stdio server whose client dies while another process still holds
its stdin (a helper the client started, a terminal multiplexer) exits by itself, cleanly, within
seconds, and what it acknowledged is kept; the same when a launcher that stays alive (like ``uv``)
sits between the client and the server. A server whose client lives is never stopped; an HTTP
server outlives the process that started it (daemonised on purpose) unless told otherwise; the
Lua workers and chunking helpers of a SIGKILLed server go with it.

Real processes: the test holds the other end of the server's stdin and stdout, as the helper of a
dead client would, and talks JSON-RPC through them; the "client" is a small Python program that
starts the server, as a client does, and is SIGKILLed. Linux only (the process table is read from /proc).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from support.paths import BIN, EXAMPLES

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads the process table from /proc (Linux)")

EXIT_BOUND = 10.0  # the bound; a server notices in ~1 s and stops in ~1 s (5x headroom)
ANSWER_BOUND = 60.0  # for a started server's first answers on a loaded machine

# The client: starts the server with the pipe ends it was given, lets them go, and waits for it.
CLIENT = """
import os, subprocess, sys
fd_in, fd_out, pidfile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
server = subprocess.Popen(sys.argv[4:], stdin=fd_in, stdout=fd_out)
os.close(fd_in); os.close(fd_out)
with open(pidfile, "w") as f:
    f.write(str(server.pid))
server.wait()
"""

# A launcher like uv: runs its arguments as a child, waits, says how it ended, exits with its code.
LAUNCHER = """
import subprocess, sys
code = subprocess.call(sys.argv[1:])
with open(sys.argv[0] + ".exit", "w") as f:
    f.write(str(code))
sys.exit(code)
"""


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


class Wire:
    """The test's end of a server's stdin and stdout: JSON-RPC requests out, answers in."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd, self.read_fd = write_fd, read_fd
        self.buffer = b""
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = ANSWER_BOUND) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        os.write(self.write_fd, line(message))
        deadline = time.monotonic() + timeout
        while True:
            answer = json.loads(self.read_line(deadline))
            if answer.get("id") == self.next_id and "method" not in answer:
                return answer

    def initialize(self) -> None:
        answer = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                             "clientInfo": {"name": "orphans", "version": "0"}})
        assert "result" in answer, answer
        os.write(self.write_fd, line({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        result = answer["result"]
        assert not result.get("isError"), result
        return result["structuredContent"]

    def read_line(self, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0, "no answer in time"
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 65536)
                assert chunk, "the server closed its stdout"
                self.buffer += chunk
        raw, _, self.buffer = self.buffer.partition(b"\n")
        return raw


@contextmanager
def started(workspace: Path, env: dict[str, str], command: list[str]) -> Iterator[tuple[subprocess.Popen[bytes], int, Wire]]:
    """The client started with ``command``; yields the client, its child's pid and the wire to that
    child, whose other ends this process holds. Everything still running at the end is killed."""
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    pidfile = workspace / "server.pid"
    with open(workspace / "server.stderr", "wb") as stderr:
        client = subprocess.Popen([sys.executable, "-c", CLIENT, str(stdin_read), str(stdout_write), str(pidfile),
                                   *command], pass_fds=(stdin_read, stdout_write), cwd=workspace, env=env,
                                  stderr=stderr)
    os.close(stdin_read)
    os.close(stdout_write)
    child = 0
    try:
        deadline = time.monotonic() + ANSWER_BOUND
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline and client.poll() is None, "the client did not start its child"
            time.sleep(0.05)
        child = int(pidfile.read_text())
        yield client, child, Wire(stdin_write, stdout_read)
    finally:
        for pid in (client.pid, child, *children(child)):
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)
        client.wait()
        os.close(stdin_write)
        os.close(stdout_read)


@contextmanager
def served(workspace: Path, env: dict[str, str], command: list[str]) -> Iterator[tuple[subprocess.Popen[bytes], int, Wire]]:
    """``started`` with the server (or a launcher of it) as the child, initialized."""
    with started(workspace, env, command) as (client, server, wire):
        wire.initialize()
        yield client, server, wire


def alive(pid: int) -> bool:
    """The process runs (a zombie, exited and not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def children(pid: int) -> list[int]:
    """The running processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def wait_gone(pids: list[int], bound: float) -> float:
    """Seconds until none of ``pids`` runs; fails past ``bound``."""
    started = time.monotonic()
    while any(alive(pid) for pid in pids):
        took = time.monotonic() - started
        assert took < bound, f"still running {took:.1f} s later: {[command_of(p) for p in pids if alive(p)]}"
        time.sleep(0.05)
    return time.monotonic() - started


def notes_workspace(root: Path, extra: str = "") -> Path:
    """A writable notes folder, watched live, synced on start (the services an orphan must stop)."""
    notes = root / "notes"
    (notes / "inbox").mkdir(parents=True)
    (notes / "projects.md").write_text("# Projects\n\nThe launch plan lives elsewhere.\n", encoding="utf-8")
    (root / "ctx.toml").write_text(
        '[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
        f'[server]\nsync_on_start = true\nwatch = true\n{extra}'
        '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\nwrite_globs = ["inbox/**"]\n',
        encoding="utf-8")
    return root


def serve_command() -> list[str]:
    return [str(BIN / "ctx"), "serve", "--config", "ctx.toml"]


def remember(wire: Wire, n: int) -> list[str]:
    """Write ``n`` notes through the server; the ids it acknowledged."""
    return [wire.call("note_write", {"source": "notes", "path": f"inbox/n{i}.md", "title": f"Heron {i}",
                                     "content": f"Herons number {i} wade at dawn."})["id"] for i in range(n)]


def assert_kept(workspace: Path, env: dict[str, str], ids: list[str]) -> None:
    """The workspace checks clean, and a second server opens it and finds every acknowledged note."""
    check = subprocess.run([str(BIN / "ctx"), "check", "--config", "ctx.toml"], cwd=workspace, env=env,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    second = subprocess.Popen(serve_command(), cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert second.stdin is not None and second.stdout is not None
    try:
        wire = Wire(second.stdin.fileno(), second.stdout.fileno())
        wire.initialize()
        found = wire.call("search", {"query": "herons wade dawn", "mode": "keyword", "limit": 50})["results"]
    finally:
        _, err = second.communicate(timeout=60)  # closes its stdin: it ends
    assert second.returncode == 0, err.decode(errors="replace")[-3000:]
    assert set(ids) <= {hit["id"] for hit in found}
    for i in range(len(ids)):
        assert (workspace / "notes" / "inbox" / f"n{i}.md").exists()


def server_log(workspace: Path) -> str:
    return (workspace / "server.stderr").read_text(encoding="utf-8", errors="replace")


def test_a_server_whose_client_is_killed_exits_though_its_stdin_is_held(tmp_path: Path,
                                                                          child_env: dict[str, str]) -> None:
    workspace = notes_workspace(tmp_path)
    with served(workspace, child_env, serve_command()) as (client, server, wire):
        ids = remember(wire, 5)
        os.write(wire.write_fd, line({"jsonrpc": "2.0", "id": "last", "method": "tools/call", "params": {
            "name": "note_write", "arguments": {"source": "notes", "path": "inbox/last.md", "title": "Last heron",
                                                "content": "The last heron leaves at dusk."}}}))
        client.send_signal(signal.SIGKILL)  # that write is in flight: written whole or not at all
        client.wait()
        took = wait_gone([server], EXIT_BOUND)
    log = server_log(workspace)
    assert "is gone: shutting down" in log and "Traceback" not in log, log[-3000:]
    assert_kept(workspace, child_env, ids)
    last = workspace / "notes" / "inbox" / "last.md"
    assert not last.exists() or last.read_text(encoding="utf-8") == "# Last heron\n\nThe last heron leaves at dusk.\n"
    print(f"\nclient SIGKILLed, stdin held: the server exited {took:.2f} s later (in-flight note kept: {last.exists()})")


def test_a_server_that_cannot_serve_exits_with_its_client_too(tmp_path: Path, child_env: dict[str, str]) -> None:
    """A config that does not load is explained to the client until it closes (or dies)."""
    workspace = notes_workspace(tmp_path, extra="no_such_key = 1\n")
    with served(workspace, child_env, serve_command()) as (client, server, wire):
        assert "cannot serve" in json.dumps(wire.request("tools/list"))
        client.send_signal(signal.SIGKILL)
        client.wait()
        took = wait_gone([server], EXIT_BOUND)
    assert "Traceback" not in server_log(workspace)
    print(f"\na server that cannot serve: exited {took:.2f} s after its client")


def test_through_a_launcher_that_stays_alive_the_server_exits_and_the_launcher_with_it(
        tmp_path: Path, child_env: dict[str, str]) -> None:
    workspace = notes_workspace(tmp_path)
    launcher = tmp_path / "bin" / "uv"  # its name makes it a launcher, as `uvx context-harness` runs under uv
    launcher.parent.mkdir()
    launcher.write_text(f"#!{sys.executable}\n{LAUNCHER}", encoding="utf-8")
    launcher.chmod(0o755)
    with served(workspace, child_env, [str(launcher), *serve_command()]) as (client, uv, wire):
        (server,) = children(uv)
        ids = remember(wire, 3)
        time.sleep(5)  # five checks with the client alive: nothing happens
        assert alive(server) and wire.request("ping")["result"] == {}
        client.send_signal(signal.SIGKILL)
        client.wait()
        took = wait_gone([server, uv], EXIT_BOUND)
    assert (tmp_path / "bin" / "uv.exit").read_text() == "0", server_log(workspace)[-3000:]  # a clean exit
    assert "Traceback" not in server_log(workspace)
    assert_kept(workspace, child_env, ids)
    print(f"\nclient of a launcher SIGKILLed: the server and the launcher exited {took:.2f} s later")


def test_a_server_whose_client_lives_keeps_serving(tmp_path: Path, child_env: dict[str, str]) -> None:
    workspace = notes_workspace(tmp_path)
    with served(workspace, child_env, serve_command()) as (client, server, wire):
        time.sleep(5)
        assert alive(server) and client.poll() is None
        assert wire.request("ping")["result"] == {}


def test_a_server_told_not_to_watch_its_client_outlives_it(tmp_path: Path, child_env: dict[str, str]) -> None:
    workspace = notes_workspace(tmp_path, extra="exit_with_parent = false\n")
    with served(workspace, child_env, serve_command()) as (client, server, wire):
        client.send_signal(signal.SIGKILL)
        client.wait()
        time.sleep(5)
        assert alive(server) and wire.request("ping")["result"] == {}


@pytest.mark.parametrize("told", [False, True])
def test_an_http_server_outlives_the_process_that_started_it_unless_told(tmp_path: Path, child_env: dict[str, str],
                                                                          told: bool) -> None:
    """Daemonised on purpose: ``ctx serve --http`` does not watch its parent unless
    ``exit_with_parent = true``; then it ends with it, through uvicorn's graceful shutdown."""
    from support.http import free_port

    workspace = notes_workspace(tmp_path, extra="exit_with_parent = true\n" if told else "")
    port = free_port()
    command = [str(BIN / "ctx"), "serve", "--http", "--bind", f"127.0.0.1:{port}", "--config", "ctx.toml"]
    with started(workspace, child_env, command) as (client, server, _wire):
        deadline = time.monotonic() + ANSWER_BOUND
        while not health(port):
            assert time.monotonic() < deadline, server_log(workspace)[-3000:]
            time.sleep(0.1)
        client.send_signal(signal.SIGKILL)
        client.wait()
        if told:
            took = wait_gone([server], EXIT_BOUND)
            assert "Traceback" not in server_log(workspace)
            print(f"\nHTTP server told to exit with its parent: exited {took:.2f} s after it")
        else:
            time.sleep(5)
            assert alive(server) and health(port)


def health(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def test_the_workers_of_a_killed_server_go_with_it(tmp_path: Path, child_env: dict[str, str]) -> None:
    """A SIGKILLed server's Lua workers (a tool was called) and chunking helpers (a large sync runs)."""
    notes_workspace(tmp_path, extra=f'[tools.script.echo]\npath = "{(EXAMPLES / "lua" / "echo.lua").as_posix()}"\n')
    many = tmp_path / "notes" / "many"
    many.mkdir()
    for i in range(3000):
        (many / f"m{i}.md").write_text(f"# Note {i}\n\n" + f"word{i} " * 200 + "\n", encoding="utf-8")
    with served(tmp_path, child_env, serve_command()) as (_client, server, wire):
        assert "hi" in json.dumps(wire.call("echo", {"text": "hi"}))  # a Lua worker ran it
        deadline = time.monotonic() + ANSWER_BOUND
        while True:  # the sync on start has started its chunking helpers
            workers = children(server)
            kinds = {kind for pid in workers for kind in ("lua.worker", "chunk_worker") if kind in command_of(pid)}
            if kinds == {"lua.worker", "chunk_worker"}:
                break
            assert time.monotonic() < deadline, f"workers seen: {[command_of(p) for p in workers]}"
            time.sleep(0.02)
        os.kill(server, signal.SIGKILL)
        took = wait_gone(workers, EXIT_BOUND)
    print(f"\nserver SIGKILLed: its {len(workers)} workers exited {took:.2f} s later")


@pytest.mark.parametrize("module", ["context_harness.lua.worker", "context_harness.ingest.chunk_worker"])
def test_a_worker_whose_host_is_killed_exits_though_its_pipes_are_held(tmp_path: Path, child_env: dict[str, str],
                                                                       module: str) -> None:
    """A worker mid-way through a long job, or whose pipes another process inherited, does not wait
    for the end of its input: it watches its host."""
    with started(tmp_path, child_env, [sys.executable, "-m", module]) as (client, worker, _wire):
        time.sleep(1.5)  # started, watching
        assert alive(worker)
        client.send_signal(signal.SIGKILL)
        client.wait()
        took = wait_gone([worker], EXIT_BOUND)
    print(f"\n{module}: its host SIGKILLed, pipes held, it exited {took:.2f} s later")
