"""git is called safely: a URL git would read as an option or a command-running transport is refused
before git runs (git sources and registries alike), git itself is allowed only the https, ssh, git and
file transports, and a git call that hangs is killed, with everything it started, at its deadline.
The real `git`, real repositories, and a silent socket on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.connectors import git as git_mod
from context_harness.connectors.git import GitError, run_git, url_problem
from context_harness.core.harness import Harness
from context_harness.errors import ConfigError, HarnessError
from context_harness.registries import service
from context_harness.registries import store as store_mod
from support.registries import config_text

pytestmark = pytest.mark.anyio

REFUSED = [
    ("--upload-pack=touch {marker};x:y", "starts with '-'"),
    ("--config=core.sshCommand=touch {marker}", "starts with '-'"),
    ("-u touch {marker} x:y", "starts with '-'"),
    ("fd::17", "remote-helper syntax fd::"),
    ("ext::sh -c touch% {marker}", "remote-helper syntax ext::"),
    ("http://127.0.0.1:9/x.git", "scheme 'http' (use https)"),
    ("ftp://127.0.0.1/x.git", "scheme 'ftp'"),
    ("foo://127.0.0.1/x.git", "scheme 'foo'"),
    ("ssh://-oProxyCommand=touch% {marker}/x", "host starting with '-'"),
    ("-oProxyCommand=x:path", "starts with '-'"),
    ("https://host/x\nmore", "control character"),
]
ALLOWED = ["https://github.com/acme/docs.git", "ssh://git@example.com/acme/docs.git", "git@example.com:acme/docs.git",
           "git://example.com/docs.git", "file:///srv/git/docs.git", "/srv/git/docs", "../registry",
           "git+ssh://git@example.com/x.git", "[::1]:repo.git", "host:path/with::colons"]


def test_urls_git_must_not_see_are_named_and_ordinary_ones_pass() -> None:
    for url, why in REFUSED:
        problem = url_problem(url.format(marker="m"))
        assert problem is not None and why in problem, (url, problem)
    for url in ALLOWED:
        assert url_problem(url) is None, url


async def test_a_git_source_with_a_refused_url_never_runs_git(workspace, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    for n, (url, why) in enumerate(REFUSED):
        name = f"evil{n}"
        toml_url = url.format(marker=marker).replace("\n", "\\n")
        workspace.write_config(f'[connectors.git.{name}]\nurl = "{toml_url}"\n')
        async with Harness.open(workspace.config()) as h:
            started = time.monotonic()
            with pytest.raises(ConfigError) as refused:
                await h.sync(f"git:{name}")
            assert time.monotonic() - started < 5  # refused, not tried (fd::17 used to hang)
            assert why in refused.value.message and f"fix it in [connectors.git.{name}]" in refused.value.message
            [source] = [s for s in (await h.sources()).sources if s.name == f"git:{name}"]
            assert source.healthy is False and why in (source.notes or "")
        assert not (workspace.root / "data" / "git" / name).exists()
    assert not marker.exists()


async def test_a_branch_that_looks_like_an_option_is_refused(workspace, tmp_path: Path) -> None:
    workspace.write_config(f'[connectors.git.b]\nurl = "{tmp_path}"\nbranch = "--upload-pack=touch x"\n')
    async with Harness.open(workspace.config()) as h:
        with pytest.raises(ConfigError, match="branch '--upload-pack=touch x' is not a branch name"):
            await h.sync("git:b")


def test_a_registry_with_a_refused_url_is_a_config_error(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    cfg = tmp_path / "ctx.toml"
    for url, why in REFUSED:
        toml_url = url.format(marker=marker).replace("\n", "\\n")
        cfg.write_text(config_text({"evil": (toml_url, "community")}), encoding="utf-8")
        started = time.monotonic()
        with pytest.raises(ConfigError) as refused:
            service.listing(config_mod.load_file(cfg))
        assert time.monotonic() - started < 5
        assert refused.value.message.startswith("[registries.evil]: url ") and why in refused.value.message
    assert not marker.exists() and not (tmp_path / "data" / "registries" / "evil").exists()


def test_the_cli_refuses_fd_17_at_once(tmp_path: Path) -> None:
    (tmp_path / "ctx.toml").write_text(config_text({"evil": ("fd::17", "community")}), encoding="utf-8")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "context_harness", "registry", "list"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and time.monotonic() - started < 30
    assert "[registries.evil]: url 'fd::17' uses git's remote-helper syntax fd::" in done.stderr
    assert "Traceback" not in done.stderr


def test_git_itself_is_allowed_only_the_listed_transports(tmp_path: Path) -> None:
    """Defence in depth: even a URL that reached git could not use fd::, ext:: or plain http."""
    marker = tmp_path / "pwned"
    for url, transport in [("fd::17", "fd"), (f"ext::sh -c touch% {marker}", "ext"), ("http://127.0.0.1:9/x", "http")]:
        started = time.monotonic()
        with pytest.raises(GitError, match=f"transport '{transport}' not allowed"):
            run_git(["clone", "--quiet", "--", url, str(tmp_path / "dest")], timeout=30)
        assert time.monotonic() - started < 10
    assert not marker.exists()


@dataclass
class Silent:
    """A TCP server on 127.0.0.1 that accepts and never answers; ``closed`` is set when the client
    side of a connection goes away (the process holding it died)."""

    port: int = 0
    closed: threading.Event = field(default_factory=threading.Event)
    accepted: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def silent() -> Iterator[Silent]:
    listener = socket.create_server(("127.0.0.1", 0))
    state = Silent(listener.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            state.accepted.set()
            conn.settimeout(0.1)
            with conn:
                while not stop.is_set():
                    try:
                        if not conn.recv(65536):
                            state.closed.set()
                            break
                    except TimeoutError:
                        continue
                    except OSError:
                        state.closed.set()
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def test_a_hung_registry_clone_is_killed_at_its_deadline(tmp_path: Path, silent: Silent, monkeypatch) -> None:
    monkeypatch.setattr(store_mod, "GIT_TIMEOUT", 1.0)  # the real figure is 300 s
    cfg = tmp_path / "ctx.toml"
    cfg.write_text(config_text({"slow": (f"https://127.0.0.1:{silent.port}/x.git", "community")}), encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(store_mod.RegistryError) as stopped:
        service.ensure(config_mod.load_file(cfg))
    assert time.monotonic() - started < 10
    assert stopped.value.message.startswith("`git clone` did not finish within 1 s and was stopped")
    assert silent.accepted.is_set()
    # git-remote-https, which held the connection, died with git (killing git alone leaves it waiting)
    assert silent.closed.wait(10)


async def test_a_hung_git_source_fails_its_sync_at_the_deadline(workspace, silent: Silent, monkeypatch) -> None:
    monkeypatch.setattr(git_mod, "GIT_TIMEOUT", 1.0)  # the real figure is 600 s
    workspace.write_config(f'[connectors.git.slow]\nurl = "git://127.0.0.1:{silent.port}/x.git"\n')
    async with Harness.open(workspace.config()) as h:
        started = time.monotonic()
        with pytest.raises(HarnessError, match="`git clone` did not finish within 1 s and was stopped"):
            await h.sync("git:slow")
        assert time.monotonic() - started < 10
    assert silent.closed.wait(10)
