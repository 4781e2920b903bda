"""``ctx search``, ``get`` and ``sources`` beside a running server of the same workspace are answered
by it over the data folder's local socket (issue 50: a shell search took seconds, the server answers
in milliseconds), with the same output as a local answer; a server killed with -9, a stopped one, a
socket others could open, another workspace's server and a changed config all leave the CLI
answering locally, without hanging. Real ``ctx serve`` subprocesses (HTTP on 127.0.0.1, and stdio),
real ``ctx`` subprocesses, real sockets."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.cli import run_ctx
from support.http import free_port
from support.workspace import Workspace, write_sample_docs

SERVED = "answered by the serving process"
LOCAL = "answered by this process"
QUERY = "search engines ranking"


@pytest.fixture
def synced(tmp_path: Path) -> Workspace:
    workspace = write_sample_docs(Workspace(tmp_path))
    assert run_ctx("--config", "ctx.toml", "sync", "--quiet", cwd=tmp_path).returncode == 0
    return workspace


def ctx(workspace: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ctx("-v", "--config", str(workspace.config_path), *args, cwd=workspace.root)


@contextmanager
def serving(workspace: Workspace, *, http: bool = True) -> Iterator[subprocess.Popen[str]]:
    """``ctx -v serve --http`` on 127.0.0.1 (or stdio, its stdin held open) until its socket answers."""
    args = ["--http", "--bind", f"127.0.0.1:{free_port()}"] if http else []
    env = {k: v for k, v in os.environ.items() if k != "CTX_CONFIG"}
    server = subprocess.Popen([sys.executable, "-m", "context_harness", "-v", "--config",
                               str(workspace.config_path), "serve", *args], cwd=workspace.root, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        socket_path = workspace.root / "data" / "serving.sock"
        deadline = time.monotonic() + 60
        while not _answers(socket_path):
            assert server.poll() is None, server.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the server's local socket never answered"
            time.sleep(0.1)
        yield server
    finally:
        if server.poll() is None:
            os.kill(server.pid, signal.SIGCONT)
            server.terminate()
        try:
            server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        probe.settimeout(1)
        try:
            probe.connect(str(path))
            return probe.recv(1).startswith(b"{")
        except OSError:
            return False


def server_log(server: subprocess.Popen[str]) -> str:
    server.terminate()
    return server.communicate(timeout=30)[1]


@pytest.mark.slow
def test_search_get_and_sources_beside_an_http_server_are_its_answers_and_read_the_same(synced: Workspace) -> None:
    local = {name: ctx(synced, *args) for name, args in {
        "search": ("search", QUERY), "json": ("search", "--json", "--explain", QUERY),
        "missing": ("get", "no-such-id"), "bad": ("search", "--limit", "500", QUERY)}.items()}
    doc_id = json.loads(local["json"].stdout)["results"][0]["id"]
    local["get"] = ctx(synced, "get", doc_id, "--max-chars", "60")
    assert all(LOCAL in done.stderr for done in local.values())
    with serving(synced) as server:
        served = {name: ctx(synced, *done.args[6:]) for name, done in local.items()}
        sources = ctx(synced, "sources")
        log = server_log(server)
    for name, done in served.items():
        assert f"{SERVED} (pid {server.pid})" in done.stderr, (name, done.stderr)
        assert (done.returncode, done.stdout) == (local[name].returncode, local[name].stdout), name
        assert [line for line in done.stderr.splitlines() if not line.startswith("DEBUG")] == \
               [line for line in local[name].stderr.splitlines() if not line.startswith("DEBUG")], name
    assert local["missing"].returncode == 1 and "error:" in local["missing"].stderr
    assert f"{SERVED} (pid {server.pid})" in sources.stderr and sources.returncode == 0
    assert "filesystem:docs: 3 documents" in sources.stdout
    assert log.count("local socket: answered search") == 3 and "local socket: answered get" in log


@pytest.mark.slow
def test_a_stdio_server_answers_too_and_a_killed_or_stopped_one_leaves_the_cli_answering_locally(
        synced: Workspace) -> None:
    local = ctx(synced, "search", QUERY)
    with serving(synced, http=False) as server:
        served = ctx(synced, "search", QUERY)
        assert f"{SERVED} (pid {server.pid})" in served.stderr and served.stdout == local.stdout
        os.kill(server.pid, signal.SIGSTOP)  # accepts (the kernel queues) but never greets
        started = time.monotonic()
        stopped = ctx(synced, "search", QUERY)
        took = time.monotonic() - started
        assert LOCAL in stopped.stderr and stopped.stdout == local.stdout and took < 30
        os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
    assert (synced.root / "data" / "serving.sock").exists()  # a dead server's file stays behind
    killed = ctx(synced, "search", QUERY)
    assert LOCAL in killed.stderr and killed.stdout == local.stdout and killed.returncode == 0
    with serving(synced) as again:  # the next server replaces the dead one's file
        assert f"{SERVED} (pid {again.pid})" in ctx(synced, "search", QUERY).stderr


@pytest.mark.slow
def test_another_workspace_a_changed_config_or_a_socket_others_may_open_is_not_asked(synced: Workspace,
                                                                                       tmp_path_factory) -> None:
    other = tmp_path_factory.mktemp("other")  # another config over the same data folder
    (other / "ctx.toml").write_text(f'[db]\npath = "{(synced.root / "data" / "ctx.sqlite").as_posix()}"\n'
                                    '[embedding]\nprovider = "disabled"\n[retrieval]\nfinal_limit = 1\n'
                                    f'[connectors.filesystem.docs]\nroot = "{synced.docs.as_posix()}"\n',
                                    encoding="utf-8")
    with serving(synced) as server:
        mine = ctx(synced, "search", QUERY)
        assert f"{SERVED} (pid {server.pid})" in mine.stderr
        theirs = run_ctx("-v", "--config", str(other / "ctx.toml"), "search", QUERY, cwd=other)
        assert LOCAL in theirs.stderr and theirs.stdout.count(" score ") == 1  # its own final_limit
        sock = synced.root / "data" / "serving.sock"
        sock.chmod(0o666)  # a socket anyone may open is nobody's to trust
        assert LOCAL in ctx(synced, "search", QUERY).stderr
        sock.chmod(0o600)
        assert SERVED in ctx(synced, "search", QUERY).stderr
        with synced.config_path.open("a", encoding="utf-8") as config:  # the server still runs the old one
            config.write("\n[retrieval]\nfinal_limit = 2\n")
        changed = ctx(synced, "search", QUERY)
        assert LOCAL in changed.stderr and changed.stdout.count(" score ") == 2


@pytest.mark.slow
def test_the_socket_answers_reads_only_and_only_for_its_own_workspace(synced: Workspace) -> None:
    from context_harness.common import localsocket

    data = synced.root / "data"
    workspace = localsocket.identity(synced.config_path, data)
    with serving(synced):
        def exchange(request: dict[str, object]) -> dict[str, object]:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(30)
                sock.connect(str(data / "serving.sock"))
                stream = sock.makefile("rwb")
                greeting = json.loads(stream.readline())
                assert greeting["workspace"] == workspace
                stream.write(json.dumps(request).encode() + b"\n")
                stream.flush()
                return dict(json.loads(stream.readline()))

        write = exchange({"op": "note_write", "args": {"path": "x.md", "content": "x"}, "workspace": workspace})
        assert write["error"]["code"] == "bad_request" and "changes nothing" in write["error"]["message"]
        assert not (synced.docs / "x.md").exists()
        foreign = exchange({"op": "search", "args": {"query": "x"}, "workspace": {**workspace, "data": "/elsewhere"}})
        assert "another workspace" in foreign["error"]["message"]
        assert "result" in exchange({"op": "search", "args": {"query": "tantivy"}, "workspace": workspace})
        with socket.socket(socket.AF_UNIX) as sock:  # a line past the bound gets no answer, only a close
            sock.settimeout(30)
            sock.connect(str(data / "serving.sock"))
            sock.recv(4096)
            try:
                sock.sendall(b"x" * (localsocket.MAX_REQUEST + 10))
                answer = sock.recv(4096)
            except ConnectionResetError:  # closed with the rest unread
                answer = b""
            assert answer == b""
