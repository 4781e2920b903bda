"""Hostile folders for the e2e battery (``tests/e2e/test_hostile_folders.py``): trees holding what
real disks hold besides notes, each with the ordinary notes that must all be indexed beside it, and
the measuring tools the battery needs (a command's wall time and peak RSS, a serving process's peak
RSS, the documents a workspace holds).

Every ordinary note holds the word ``okapi`` and a token of its own; ``HostileTree.expected`` maps
each note's ``source_id`` to that token. Trees: ``fifos``, ``sockets``, ``devices``, ``names``,
``symlinks``, ``unreadable``, ``deep`` (10,000 levels), ``many`` (100,000 empty files); ``Churn``
changes a tree while it is synced (symlinks swapped, files growing, shrinking, vanishing,
permissions flipped) and restores a final state.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from context_harness.connectors.names import escape_name
from support.trees import LATIN1_NAME, make_deep, make_device, make_socket, remove_deep

DEPTH = 10_000
MANY = 100_000
MAX_FILE_SIZE = 200_000  # the battery's [connectors.filesystem] max_file_size


@dataclass
class HostileTree:
    """A folder of hostile entries and ordinary notes; ``expected``: source_id -> its token."""

    root: Path
    expected: dict[str, str] = field(default_factory=dict)
    needs_unprivileged: bool = False  # permissions must bind (root runs through ``setpriv``)
    cleanup: list = field(default_factory=list)

    def note(self, rel: str | bytes, token: str) -> None:
        """An ordinary note at ``rel`` (bytes: a raw, maybe non-UTF-8, name) holding ``token``."""
        raw = rel if isinstance(rel, bytes) else os.fsencode(rel)
        path = os.path.join(os.fsencode(self.root), raw)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(f"# Note {token}\n\nokapi {token} lives in an ordinary note.\n".encode())
        self.expected["/".join(escape_name(os.fsdecode(p)) for p in raw.split(b"/"))] = token

    def remove(self) -> None:
        for undo in reversed(self.cleanup):
            with contextlib.suppress(OSError):
                undo()


def build(kind: str, root: Path) -> HostileTree:
    """The tree ``kind`` under ``root`` (made here), with ordinary notes beside its hostile entries."""
    root.mkdir(parents=True, exist_ok=True)
    tree = HostileTree(root)
    tree.note("ordinary.md", "tokentop")
    tree.note("sub/ordinary.txt", "tokensub")
    BUILDERS[kind](tree)
    return tree


def _fifos(tree: HostileTree) -> None:
    os.mkfifo(tree.root / "pipe.md")
    os.mkfifo(tree.root / "sub" / "pipe.txt")
    (tree.root / "ignored").mkdir()
    os.mkfifo(tree.root / "ignored" / ".gitignore")
    tree.note("ignored/beside-fifo-gitignore.md", "tokengitignore")


def _sockets(tree: HostileTree) -> None:
    make_socket(tree.root / "sock.md")
    make_socket(tree.root / "sub" / "sock.txt")


def _devices(tree: HostileTree) -> None:
    if not make_device(tree.root / "zero.md", 1, 5):
        pytest.skip("mknod is not allowed on this machine (no CAP_MKNOD, or a user namespace): "
                    "no device node can be made, so the /dev/zero twin case cannot run here")
    make_device(tree.root / "sub" / "urandom.txt", 1, 9)
    make_device(tree.root / "null.md", 1, 3)


def _names(tree: HostileTree) -> None:
    tree.note(LATIN1_NAME, "tokenlatin")
    tree.note(b"old/r\xe9sum\xe9 \xff.txt", "tokenlatinsub")
    tree.note("new\nline.md", "tokennewline")
    tree.note("n" * 252 + ".md", "tokenlong")
    tree.note("Case.md", "tokencaseupper")
    tree.note("case.md", "tokencaselower")
    tree.note("caf\\xe9.md", "tokenliteral")


def _symlinks(tree: HostileTree) -> None:
    r = tree.root
    os.symlink("loop.md", r / "loop.md")
    os.symlink("nowhere.md", r / "dangling.md")
    os.mkfifo(r / "fifo-target")
    os.symlink("fifo-target", r / "to-fifo.md")
    os.symlink(".", r / "sub" / "cycle")
    os.symlink("..", r / "sub" / "up")
    outside = r.parent / "outside.md"
    outside.write_text("# Outside\n\nnot in the root\n")
    os.symlink(outside, r / "outside.md")
    if make_device(r.parent / "zero-outside", 1, 5):
        os.symlink("../zero-outside", r / "to-device.md")


def _unreadable(tree: HostileTree) -> None:
    tree.needs_unprivileged = True
    locked = tree.root / "locked"
    locked.mkdir()
    (locked / "hidden.md").write_text("# Hidden\n\nokapi behind a locked door\n")
    (tree.root / "lost+found").mkdir()
    secret = tree.root / "secret.md"
    secret.write_text("# Secret\n\nokapi nobody may read this\n")
    for path in (locked, tree.root / "lost+found", secret):
        path.chmod(0)
        tree.cleanup.append(lambda p=path: p.chmod(0o755))


def _deep(tree: HostileTree) -> None:
    (tree.root / "deep").mkdir()
    make_deep(tree.root / "deep", DEPTH, leaf="bottom.md",
              text="# Bottom\n\nokapi tokenbottom at the very bottom\n")
    tree.expected["deep/" + "d/" * DEPTH + "bottom.md"] = "tokenbottom"
    tree.note("deep/d/shallow.md", "tokenshallow")
    tree.cleanup.append(lambda: remove_deep(tree.root / "deep"))


def _many(tree: HostileTree) -> None:
    for folder in range(MANY // 1000):
        where = tree.root / "empty" / f"f{folder:03d}"
        where.mkdir(parents=True)
        for i in range(1000):
            os.close(os.open(where / f"e{i:03d}.md", os.O_WRONLY | os.O_CREAT, 0o644))
    tree.note("empty/f050/ordinary.md", "tokenamongempty")
    tree.cleanup.append(lambda: shutil.rmtree(tree.root / "empty", ignore_errors=True))


BUILDERS = {"fifos": _fifos, "sockets": _sockets, "devices": _devices, "names": _names, "symlinks": _symlinks,
            "unreadable": _unreadable, "deep": _deep, "many": _many}


class Churn:
    """Changes ``tree`` on a thread until ``stop()``: a symlink swapped between a note, a folder, a
    FIFO, a dangling target and a file outside the root; a file growing past ``MAX_FILE_SIZE`` and
    cut back; files created and deleted; a file's and a folder's permissions flipped. ``stop()``
    leaves a final state whose ordinary notes are in ``tree.expected``."""

    def __init__(self, tree: HostileTree) -> None:
        self.tree = tree
        r = tree.root
        tree.needs_unprivileged = True
        tree.note("targets/t1.md", "tokentarget")
        os.mkfifo(r / "targets" / "fifo")
        (r.parent / "outside-churn.md").write_text("# Outside\n\noutside the root\n")
        tree.note("flip.md", "tokenflip")
        tree.note("flipdir/inside.md", "tokenflipdir")
        tree.note("grow.md", "tokengrow")
        (r / "flicker").mkdir()
        self.swaps = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="churn", daemon=True)

    def start(self) -> Churn:
        self._thread.start()
        return self

    def _run(self) -> None:
        r, rng = self.tree.root, random.Random(27)
        targets = ["targets/t1.md", "targets", "targets/fifo", "missing.md", str(r.parent / "outside-churn.md")]
        chunk = b"okapi growing " * 4096
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                spare = r / ".swing.tmp"
                os.symlink(rng.choice(targets), spare)
                os.replace(spare, r / "swing.md")  # swapped atomically, as editors and deploys do
                with open(r / "grow.md", "ab") as out:
                    out.write(chunk)
                if rng.random() < 0.2:
                    os.truncate(r / "grow.md", rng.randrange(1000))
                name = r / "flicker" / f"v{rng.randrange(50)}.md"
                if name.exists():
                    name.unlink()
                else:
                    name.write_text("# Flicker\n\nhere and gone\n")
                (r / "flip.md").chmod(rng.choice([0, 0o644]))
                (r / "flipdir").chmod(rng.choice([0, 0o755]))
                self.swaps += 1
            time.sleep(0.002)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        r = self.tree.root
        (r / "flip.md").chmod(0o644)
        (r / "flipdir").chmod(0o755)
        (r / "grow.md").write_text("# Note tokengrow\n\nokapi tokengrow lives in an ordinary note.\n")
        spare = r / ".swing.tmp"
        with contextlib.suppress(FileNotFoundError):
            spare.unlink()
        os.symlink("missing.md", spare)
        os.replace(spare, r / "swing.md")
        shutil.rmtree(r / "flicker")


# -- measuring ----------------------------------------------------------------------------------

@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float


def run_measured(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Finished:
    """Run ``argv``; its wall time and peak RSS: the largest ``VmHWM`` read every 20 ms while it
    runs (``wait4``'s ``ru_maxrss`` would also count the forking test process's pages), or
    ``ru_maxrss`` when it ended before the first reading. Past ``timeout`` it is killed and the
    result says so (returncode -9)."""
    with open(cwd / ".out", "w+") as out, open(cwd / ".err", "w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        peaks: list[float] = []
        ended = threading.Event()
        sampler = threading.Thread(target=_sample_peak, args=(proc.pid, ended, peaks), daemon=True)
        sampler.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            ended.set()
            killer.cancel()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        peak = max(peaks) if peaks else usage.ru_maxrss / 1024
        return Finished(proc.returncode, out.read(), err.read(), seconds, peak)


def _sample_peak(pid: int, ended: threading.Event, peaks: list[float]) -> None:
    while not ended.wait(0.02):
        with contextlib.suppress(OSError, AssertionError, ValueError):
            peaks.append(peak_rss_mb(pid))


def ctx(*args: str) -> list[str]:
    return [sys.executable, "-m", "context_harness", *args]


def unprivileged() -> list[str]:
    """A prefix under which file permissions bind (as ``tests/e2e/test_disk_faults.py`` does)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without `setpriv` (util-linux): permissions cannot be made to bind")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def peak_rss_mb(pid: int) -> float:
    """VmHWM of a running process."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


def serving_pid(config_path: Path) -> int:
    """The ``ctx serve`` process started with ``config_path`` (found by its command line)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"context_harness" in argv and os.fsencode(config_path) in argv and b"sync" not in argv \
                and b"check" not in argv:
            return int(entry)
    raise AssertionError(f"no serving process for {config_path}")


def stored(db: Path) -> dict[str, str]:
    """source_id -> body of every document in the workspace's SQLite file (read only)."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        return dict(conn.execute("SELECT source_id, body FROM documents").fetchall())
    finally:
        conn.close()


def missing(tree: HostileTree, db: Path) -> list[str]:
    """Ordinary notes of ``tree`` not stored with their token (empty when all are indexed)."""
    docs = stored(db)
    return sorted(sid for sid, token in tree.expected.items() if token not in docs.get(sid, ""))


__all__ = ["DEPTH", "MANY", "MAX_FILE_SIZE", "BUILDERS", "Churn", "Finished", "HostileTree", "build", "ctx",
           "missing", "peak_rss_mb", "run_measured", "serving_pid", "stored", "unprivileged"]
