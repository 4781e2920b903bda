"""Disk and permission faults: a read-only data folder, a disk that fills during a commit, a keyword
index deleted or damaged, a truncated SQLite file. Each gives one clear line naming the problem (no
traceback, exit 1, no retry loop), and the fix it names (`ctx check --repair`, or freeing the fault)
brings back every document still on disk: the workspace then equals one synced without a fault.

Faults are made for real: permissions (as root, the command runs without CAP_DAC_OVERRIDE through
`setpriv`, so permissions bind), a per-file size limit (RLIMIT_FSIZE: writes past it fail with
EFBIG, as on a full disk), a small tmpfs where the machine allows mounting one, and bytes written
over the files.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from support.http import free_port, stop_process

pytestmark = pytest.mark.slow

NOTES = 300


def ctx(*args: str) -> list[str]:
    return [sys.executable, "-m", "context_harness", *args]


def unprivileged() -> list[str]:
    """A prefix under which file permissions bind: nothing for a normal user; for root, `setpriv`
    dropping the capability that lets root write anywhere."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without `setpriv` (util-linux): permissions cannot be made to bind")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


class Workspace:
    def __init__(self, root: Path, env: dict[str, str], name: str = "data") -> None:
        self.root, self.env = root, env
        self.docs = root / "docs"
        self.data = root / name
        self.config = root / f"{name}.toml"
        self.config.write_text(f'[db]\npath = "{name}/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                               '[connectors.filesystem.notes]\nroot = "docs"\n')

    def run(self, *args: str, prefix: list[str] | None = None, limit_bytes: int | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        def limit() -> None:
            if limit_bytes is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

        return subprocess.run([*(prefix or []), *ctx(*args, "--config", str(self.config))], cwd=self.root,
                              env=self.env, capture_output=True, text=True, timeout=timeout, preexec_fn=limit)

    def sync(self) -> None:
        done = self.run("sync")
        assert done.returncode == 0, done.stderr

    def snapshot(self) -> dict:
        """Documents with their content hashes and chunk ids, and what a search finds."""
        conn = sqlite3.connect(self.data / "ctx.sqlite")
        try:
            docs = conn.execute("SELECT id, content_hash FROM documents ORDER BY id").fetchall()
            chunks = conn.execute("SELECT id FROM chunks ORDER BY id").fetchall()
        finally:
            conn.close()
        # Every tenth note holds "quagga": the search finds them all, whatever the index's statistics.
        found = self.run("search", "quagga", "--mode", "keyword", "--limit", "100", "--json")
        assert found.returncode == 0, found.stderr
        hits = sorted(r["source_id"] for r in json.loads(found.stdout)["results"])
        return {"docs": docs, "chunks": chunks, "hits": hits}

    def check_passes(self) -> None:
        done = self.run("check")
        assert done.returncode == 0 and done.stdout.startswith("consistent:"), done.stdout + done.stderr


def write_notes(docs: Path, rng: random.Random, count: int, start: int = 0) -> None:
    docs.mkdir(exist_ok=True)
    for i in range(start, start + count):
        body = " ".join(f"w{rng.randrange(3000)}" for _ in range(300))
        marker = " quagga" if i % 10 == 0 else ""
        (docs / f"note{i:04d}.md").write_text(f"# Note {i}\n\n{body}{marker}\n\n## Part two\n\n{body[::-1]}\n")


def one_clear_line(done: subprocess.CompletedProcess[str], *phrases: str) -> str:
    """The command failed with exit 1 and one `error:` line holding ``phrases``, and no traceback."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    for phrase in phrases:
        assert phrase in errors[0], errors[0]
    return errors[0]


@pytest.fixture
def pair(tmp_path: Path, child_env: dict[str, str]) -> tuple[Workspace, Workspace, random.Random]:
    """The workspace under test and a reference synced without faults, over the same notes."""
    rng = random.Random(1605)
    write_notes(tmp_path / "docs", rng, NOTES)
    return Workspace(tmp_path, child_env), Workspace(tmp_path, child_env, "reference"), rng


@contextlib.contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    modes = {}
    for top in paths:
        for p in [top, *top.rglob("*")]:
            modes[p] = p.stat().st_mode
            p.chmod(modes[p] & ~0o222)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_read_only_data_folder_gives_one_line_for_every_command(pair) -> None:
    ws, _, _ = pair
    ws.sync()
    prefix = unprivileged()
    with read_only(ws.data):
        for args in (["search", "w17"], ["sync"], ["check"], ["serve"]):
            started = time.monotonic()
            done = ws.run(*args, prefix=prefix, timeout=60)
            line = one_clear_line(done, "not writable", str(ws.data))
            assert time.monotonic() - started < 30, f"{args}: no retry loop, it should stop at once"
        assert "[db] path" in line
    ws.sync()  # with write access back, it works again
    ws.check_passes()


def test_keyword_index_that_cannot_be_written_during_a_sync_catches_up_after(pair) -> None:
    """SQLite commits the new notes (with their "index me" markers), then the keyword index refuses
    the write: one line; once writable, the next command brings the index up to date."""
    ws, ref, rng = pair
    ws.sync()
    write_notes(ws.docs, rng, 40, start=NOTES)
    with read_only(ws.data / "tantivy"):
        one_clear_line(ws.run("sync", prefix=unprivileged()), "not writable")
    ws.check_passes()
    ws.sync()
    ref.sync()
    assert ws.snapshot() == ref.snapshot()


def test_disk_full_during_a_commit_loses_nothing_and_the_next_sync_completes(pair) -> None:
    """Writes past 256 kB per file fail (RLIMIT_FSIZE, EFBIG): the incremental sync's commit cannot
    be written. Nothing stored before is lost, and the next sync with room gives the reference."""
    ws, ref, rng = pair
    ws.sync()
    before = ws.snapshot()
    write_notes(ws.docs, rng, 120, start=NOTES)
    for path in list(ws.docs.glob("note00[0-4]*.md")):
        path.write_text(path.read_text() + "\nan edit w17 w17\n")
    failed = ws.run("sync", limit_bytes=256 * 1024)
    one_clear_line(failed, str(ws.data), "run the command again")
    assert ws.snapshot() == before
    ws.check_passes()
    ws.sync()
    ref.sync()
    assert ws.snapshot() == ref.snapshot()


def mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, timeout=30)
    return done.returncode == 0


def test_a_really_full_filesystem(tmp_path: Path, child_env: dict[str, str]) -> None:
    """The same on a real 3 MB filesystem (a tmpfs; skipped where this machine cannot mount one)."""
    small = tmp_path / "small"
    if not mount_tmpfs(small, "3m"):
        pytest.skip("cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN); "
                    "the RLIMIT_FSIZE test covers a full disk")
    try:
        rng = random.Random(7)
        write_notes(tmp_path / "docs", rng, 400)
        ws = Workspace(tmp_path, child_env, "data")
        ws.config.write_text(ws.config.read_text().replace('path = "data/ctx.sqlite"',
                                                           f'path = "{small}/ctx.sqlite"'))
        ws.data = small
        one_clear_line(ws.run("sync"), "is full", str(small))
        ws.check_passes()  # nothing half-written
        for path in sorted(ws.docs.glob("*.md"))[60:]:
            path.write_text(path.read_text() + " more words " * 50)
        one_clear_line(ws.run("sync"), "full", str(small))  # still full: the same line, no crash
        # Room is made (as a user would free space): the next sync completes.
        grown = subprocess.run(["mount", "-o", "remount,size=40m", str(small)], capture_output=True, timeout=30)
        assert grown.returncode == 0, grown.stderr
        ws.sync()
        ws.check_passes()
        ref = Workspace(tmp_path, child_env, "reference")
        ref.sync()
        assert ws.snapshot() == ref.snapshot()
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True, timeout=30)


@pytest.mark.parametrize("damage", ["deleted", "garbage_meta", "truncated_segments", "scrambled_segments"])
def test_deleted_or_damaged_keyword_index_is_rebuilt_from_sqlite(pair, damage: str) -> None:
    ws, ref, _ = pair
    ws.sync()
    ref.sync()
    index = ws.data / "tantivy"
    segments = [p for p in index.iterdir() if p.suffix in {".idx", ".term", ".pos", ".store", ".fast"}]
    if damage == "deleted":
        shutil.rmtree(index)
    elif damage == "garbage_meta":
        (index / "meta.json").write_text("{not json")
    for path in segments:
        if damage == "truncated_segments":
            os.truncate(path, 5)
        elif damage == "scrambled_segments":
            data = bytearray(path.read_bytes())
            path.write_bytes(bytes((b * 7 + 13) % 256 for b in data[:-40]) + data[-40:])
    assert ws.snapshot() == ref.snapshot()
    ws.check_passes()


@pytest.mark.parametrize("cut", [0.5, 0.1])
def test_truncated_sqlite_file_is_named_and_repair_brings_the_documents_back(pair, cut: float) -> None:
    ws, ref, _ = pair
    ws.sync()
    ref.sync()
    db = ws.data / "ctx.sqlite"
    os.truncate(db, int(db.stat().st_size * cut))
    one_clear_line(ws.run("search", "w17"), "SQLite file", "damaged", "ctx check --repair")
    checked = ws.run("check")
    assert checked.returncode == 1 and "damaged" in checked.stdout and "Traceback" not in checked.stderr
    repaired = ws.run("check", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert repaired.stdout.startswith("repaired: the SQLite file was damaged"), repaired.stdout
    assert f"({NOTES} documents)" in repaired.stdout
    assert list(ws.data.glob("ctx.sqlite.damaged-*")), "the damaged file is kept, not deleted"
    assert ws.snapshot() == ref.snapshot()
    ws.check_passes()


def test_a_server_keeps_serving_when_its_live_sync_cannot_write(pair, tmp_path: Path) -> None:
    """No crash loop: the watcher's sync fails (the keyword index is read-only), the server logs one
    line and keeps answering; once writable, the next change is indexed."""
    ws, _, rng = pair
    ws.config.write_text(ws.config.read_text() + "[server]\nwatch = true\n")
    ws.sync()
    port = free_port()
    proc = serve_http(ws, port)
    try:
        url = f"http://127.0.0.1:{port}/tools/search"

        def answer(query: str) -> httpx.Response:
            return httpx.post(url, json={"query": query, "mode": "keyword"}, timeout=10)

        def found(query: str) -> list[str]:
            r = answer(query)
            assert r.status_code == 200, r.text
            return [hit["source_id"] for hit in r.json()["results"]]

        def started() -> bool:  # the sync on start is done: this test is about the live index's writes
            state = httpx.get(f"http://127.0.0.1:{port}/tools/sources", timeout=10).json()["sources"][0]
            return state["sync_passes"] >= 1 and not state["syncing"]

        wait_for(started, 30, lambda: read_available(proc))
        with read_only(ws.data / "tantivy"):
            (ws.docs / "blocked.md").write_text("# Blocked\n\nquokkablocked\n")
            wait_for(lambda: "live update failed: the data folder" in read_available(proc), 20,
                     lambda: read_available(proc))
            # Searches answer: with results, or (Tantivy reloads need its folder writable) the same clear error.
            r = answer("w17")
            assert r.status_code == 200 or r.json()["error"]["code"] == "storage_error", r.text
            assert "Traceback" not in read_available(proc)
        (ws.docs / "later.md").write_text("# Later\n\nquokkalater\n")
        wait_for(lambda: found("quokkalater") == ["later.md"], 20, lambda: read_available(proc))
        # The failed write is retried (a full incremental sync after 2 s, doubling): caught up too.
        wait_for(lambda: found("quokkablocked") == ["blocked.md"], 30, lambda: read_available(proc))
        assert "trying again in 2 s" in read_available(proc)
        assert proc.poll() is None
    finally:
        stop_process(proc)


def serve_http(ws: Workspace, port: int) -> subprocess.Popen:
    """``ctx serve --http`` on 127.0.0.1 (without root's override), once it answers /health."""
    proc = subprocess.Popen([*unprivileged(), *ctx("serve", "--http", "--bind", f"127.0.0.1:{port}", "--config",
                                                   str(ws.config))],
                            cwd=ws.root, env=ws.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, read_available(proc)
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        time.sleep(0.1)
    proc.kill()
    raise TimeoutError("ctx serve --http did not answer /health")


_seen: dict[int, str] = {}


def read_available(proc: subprocess.Popen) -> str:
    """The server's stderr so far (non-blocking)."""
    assert proc.stderr is not None
    os.set_blocking(proc.stderr.fileno(), False)
    chunk = proc.stderr.read()
    if chunk:
        _seen[proc.pid] = _seen.get(proc.pid, "") + chunk.decode(errors="replace")
    return _seen.get(proc.pid, "")


def wait_for(condition: Callable[[], bool], seconds: float, explain: Callable[[], str] = str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out: {explain()}"
        time.sleep(0.2)
