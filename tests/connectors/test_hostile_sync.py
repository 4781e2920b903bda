"""``ctx sync`` as a user runs it, over a folder holding every hostile entry at once: a FIFO, a unix
socket, a ``/dev/zero`` twin named like a note (where ``mknod`` is allowed), a Latin-1 file name, a
1,000-deep folder and a folder the user may not read (as root, through ``setpriv`` dropping the
capability that overrides permissions). It returns promptly, exit 0, names each skip, indexes every
ordinary file, and its memory stays bounded."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.trees import LATIN1_NAME, make_deep, make_device, make_socket, remove_deep, unblock_fifos

pytestmark = pytest.mark.slow

MEMORY_LIMIT = 3 * 2**30  # address space of the sync: a device read without bound would hit it in seconds


def unprivileged() -> list[str]:
    """A prefix under which file permissions bind (see tests/e2e/test_disk_faults.py)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without `setpriv` (util-linux): a mode-000 folder cannot be made unreadable")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.fixture
def hostile(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("# Ok\n\nordinary wombat\n")
    (docs / os.fsdecode(LATIN1_NAME)).write_bytes(b"# Latin\n\nwombat from an old disk\n")
    os.mkfifo(docs / "pipe.md")
    make_socket(docs / "sock.md")
    device = make_device(docs / "z.md", 1, 5)
    make_deep(docs, 1000, text="# Bottom\n\nwombat at the bottom\n")
    locked = docs / "locked"
    locked.mkdir()
    (locked / "secret.md").write_text("# Secret\n")
    (locked / ".gitignore").write_text("*.tmp\n")
    (docs / "after.md").write_text("# After\n\nwombat after the locked folder\n")
    locked.chmod(0)
    (tmp_path / "ctx.toml").write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                                       '[connectors.filesystem.notes]\nroot = "docs"\n')
    yield tmp_path, device
    locked.chmod(0o755)
    unblock_fifos(docs)
    remove_deep(docs)


def ctx(cwd: Path, *args: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("CTX_CONFIG", None)
    return subprocess.run([*(prefix or []), sys.executable, "-m", "context_harness", *args, "--config", "ctx.toml"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60, preexec_fn=limit_memory)


def test_ctx_sync_over_every_hostile_entry_returns_promptly_and_indexes_every_ordinary_file(hostile) -> None:
    cwd, device = hostile
    done = ctx(cwd, "sync", "--json", prefix=unprivileged())
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["sources"][0]
    assert summary["added"] == 4  # ok.md, after.md, the Latin-1 note, the 1,000-deep note
    assert summary["skipped_reasons"] == {"not_a_regular_file": 2 + device, "unreadable": 1}
    named = {(i["source_id"], i["reason"]) for i in summary["skipped_items"]}
    assert {("pipe.md", "not_a_regular_file"), ("sock.md", "not_a_regular_file"), ("locked", "unreadable")} <= named
    assert "Traceback" not in done.stderr
    found = ctx(cwd, "search", "wombat", "--json")
    assert found.returncode == 0, found.stderr
    ids = {r["source_id"] for r in json.loads(found.stdout)["results"]}
    assert ids == {"ok.md", "after.md", "caf\\xe9.md", "d/" * 1000 + "bottom.md"}
