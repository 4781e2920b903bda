"""The hostile-folder battery (issue 27, item 9): folders holding what real disks hold besides
notes — FIFOs, unix sockets, device nodes (a twin of ``/dev/zero``), non-UTF-8 and other odd names,
symlink loops and escapes, unreadable folders, 10,000-deep nesting, 100,000 empty files — and a
folder changed while it is synced (symlinks swapped, files growing, shrinking, vanishing,
permissions flipped), under ``ctx sync`` and under a watching stdio server.

After each: the sync returns within 150 s (5x the 30 s target, which ``benchmarks/hostile_folders.py``
measures; 100,000 files take 26-33 s on a loaded 2-core machine), every ordinary note is indexed, ``ctx check`` finds the
workspace consistent, the syncing process's peak RSS stays under ``RSS_CAP_MB``, and under the
server a note saved afterwards is searchable within 1 s. Permissions bind for root through
``setpriv`` (as the disk-fault battery does); a device node is made where ``mknod`` is allowed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from support.hostile_folders import (
    BUILDERS,
    MAX_FILE_SIZE,
    Churn,
    HostileTree,
    build,
    ctx,
    missing,
    peak_rss_mb,
    run_measured,
    serving_pid,
    stored,
    unprivileged,
)
from support.trees import unblock_fifos

pytestmark = pytest.mark.slow

SYNC_LIMIT = 150.0  # seconds a sync may take, whatever the folder holds: 5x the 30 s target
FRESH_LIMIT = 1.0  # seconds from saving a note to finding it, under the server
RSS_CAP_MB = 500.0  # peak RSS of the syncing process (a read of a /dev/zero twin reached 5 GB)
KINDS = sorted(BUILDERS) + ["churn"]


def write_config(root: Path) -> Path:
    config = root / "ctx.toml"
    config.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                      "[server]\nsync_on_start = true\nwatch = true\n"
                      f'[connectors.filesystem.notes]\nroot = "docs"\nmax_file_size = {MAX_FILE_SIZE}\n',
                      encoding="utf-8")
    return config


class Case:
    """One hostile tree in a workspace, and the commands run over it."""

    def __init__(self, kind: str, root: Path, env: dict[str, str]) -> None:
        self.kind, self.root, self.env = kind, root, env
        self.tree: HostileTree = build("names" if kind == "churn" else kind, root / "docs")
        self.churn = Churn(self.tree) if kind == "churn" else None
        self.config = write_config(root)
        self.db = root / "data" / "ctx.sqlite"
        self.prefix = unprivileged() if self.tree.needs_unprivileged else []

    def run(self, *args: str, timeout: float = SYNC_LIMIT + 30):
        done = run_measured([*self.prefix, *ctx(*args, "--config", str(self.config))], self.root, self.env, timeout)
        if done.returncode == -9:
            unblock_fifos(self.tree.root)
        return done

    def sync(self) -> None:
        done = self.run("sync")
        where = f"{self.kind}: ctx sync"
        assert done.returncode != -9, f"{where} still running after {SYNC_LIMIT + 30:.0f} s (hung?)\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr, f"{where}: {done.stderr[-3000:]}"
        assert done.returncode == 0, f"{where} exited {done.returncode}: {done.stderr[-2000:]}"
        assert done.seconds < SYNC_LIMIT, f"{where} took {done.seconds:.1f} s"
        assert done.peak_rss_mb < RSS_CAP_MB, f"{where}: peak RSS {done.peak_rss_mb:.0f} MB"

    def check_consistent(self) -> None:
        done = self.run("check", timeout=120)
        assert done.returncode == 0 and done.stdout.startswith("consistent:"), \
            f"{self.kind}: ctx check: {done.stdout}{done.stderr[-2000:]}"

    def all_indexed(self) -> None:
        assert missing(self.tree, self.db) == [], f"{self.kind}: ordinary notes not indexed"
        too_big = [sid for sid, body in stored(self.db).items() if len(body.encode()) > MAX_FILE_SIZE]
        assert not too_big, f"{self.kind}: stored past max_file_size: {too_big}"

    def close(self) -> None:
        if self.churn is not None:
            self.churn.stop()
        self.tree.remove()


@pytest.fixture
def case(request: pytest.FixtureRequest, tmp_path: Path, child_env: dict[str, str]):
    made = Case(request.param, tmp_path, child_env)
    try:
        yield made
    finally:
        made.close()


@pytest.mark.parametrize("case", KINDS, indirect=True)
def test_ctx_sync_over_a_hostile_folder(case: Case) -> None:
    churn = case.churn
    if churn is not None:
        churn.start()
        try:
            case.sync()  # while the folder changes under it
        finally:
            churn.stop()
            case.churn = None
        assert churn.swaps > 10, "the folder changed during the sync"
    case.sync()
    case.all_indexed()
    case.check_consistent()


@pytest.mark.anyio
@pytest.mark.parametrize("case", KINDS, indirect=True)
async def test_a_watching_server_over_a_hostile_folder(case: Case) -> None:
    head, *rest = [*case.prefix, *ctx("--config", str(case.config))]
    params = StdioServerParameters(command=head, args=rest, env=case.env)
    async with Client(params) as client:
        pid = serving_pid(case.config)
        await settled(client, case, "its sync on start")
        churn = case.churn
        if churn is not None:
            churn.start()
            await anyio.sleep(5)  # the watcher sees every change
            churn.stop()
            case.churn = None
            assert churn.swaps > 10, "the folder changed while watched"
            await settled(client, case, "the churn")
        found = await fresh_note_found(client, case.tree.root)
        sources = (await client.call_tool("sources", {})).structured_content["sources"]
        assert found < FRESH_LIMIT, f"{case.kind}: a new note was found only after {found:.2f} s; sources {sources}"
        peak = peak_rss_mb(pid)
    assert peak < RSS_CAP_MB, f"{case.kind}: the server's peak RSS {peak:.0f} MB"
    assert sources[0]["healthy"], f"{case.kind}: {sources[0]}"
    case.check_consistent()


async def settled(client: Client, case: Case, after: str) -> None:
    """Within ``SYNC_LIMIT`` the server has synced (not syncing, a pass done) and holds every
    ordinary note."""
    started = time.monotonic()
    state: dict = {}
    while time.monotonic() - started < SYNC_LIMIT:
        state = (await client.call_tool("sources", {})).structured_content["sources"][0]
        if not state["syncing"] and state.get("sync_passes", 1) >= 1 and case.db.exists() \
                and not missing(case.tree, case.db):
            return
        await anyio.sleep(0.2)
    still = missing(case.tree, case.db) if case.db.exists() else ["(no database)"]
    pytest.fail(f"{case.kind}: {SYNC_LIMIT:.0f} s after {after} the server is not done: missing {still[:5]}, "
                f"sources {state}")


async def fresh_note_found(client: Client, docs: Path) -> float:
    """Seconds from saving a new note to the first keyword search that finds it (at most 10)."""
    token = f"freshquokka{int(time.time() * 1000) % 100000}"
    started = time.monotonic()
    (docs / "fresh.md").write_text(f"# Fresh\n\n{token} saved while serving\n", encoding="utf-8")
    while time.monotonic() - started < 10:
        found = await client.call_tool("search", {"query": token, "mode": "keyword", "limit": 3})
        if [r["source_id"] for r in found.structured_content["results"]] == ["fresh.md"]:
            return time.monotonic() - started
        await anyio.sleep(0.02)
    return float("inf")


if sys.platform != "linux":  # FIFOs, sockets, device nodes, setpriv, /proc: the battery is Linux's
    pytestmark = [pytest.mark.slow, pytest.mark.skip(reason="the hostile-folder battery needs Linux")]
