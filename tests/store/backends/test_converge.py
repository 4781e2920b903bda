"""Replicas' own keyword indexes converge (issue 33): two replicas on one PostgreSQL, one of them (B, a
process of its own) syncing edits in a loop while the other (A) answers searches; B is SIGKILLed while
it holds the writer lock, and reopened (it catches up from its record); then B misses writes while
the change log is trimmed past them (a gap: it rebuilds). Each time, once A and B have compacted their
indexes (idle), every query's ranked results and scores through A and B equal a fresh replica's. ``benchmarks/replicas.py --converge`` is the heavy variant
(``ctx serve --http`` replicas, 300 queries)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.models import SearchRequest
from context_harness.store.keyword import replaced_entries
from context_harness.store.postgres.follower import ReplicaKeywordIndex
from context_harness.store.postgres.lock import INDEX_LOCK
from support.workspace import Workspace

from .test_keyword_follower import WORDS, write_notes

pytestmark = pytest.mark.anyio
QUERIES = [" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 2 + i % 3)) for i in range(30)] + ["note"]

WRITER = textwrap.dedent("""\
    import random, sys
    from pathlib import Path
    import anyio
    from context_harness import config
    from context_harness.core.harness import Harness

    WORDS = sys.argv[3].split()

    async def main():
        docs, rng = Path(sys.argv[2]), random.Random(5)
        async with Harness.open(config.load(Path(sys.argv[1]))) as h:
            for round in range(10_000):
                for i in rng.sample(range(80), 15):
                    path = docs / f"n{i:03}.md"
                    if rng.random() < 0.2:
                        path.unlink(missing_ok=True)
                    else:
                        words = " ".join(rng.choice(WORDS) for _ in range(1 + rng.randrange(6)))
                        path.write_text(f"# Note {i}\\n\\n{words} note {i} round {round}\\n", encoding="utf-8")
                await h.sync()
                Path(sys.argv[4]).write_text(str(round + 1), encoding="utf-8")

    anyio.run(main)
""")


def replica(workspace: Workspace, name: str, url: str) -> Path:
    path = workspace.root / f"{name}.toml"
    path.write_text(f'[db]\npath = "{name}-data/ctx.sqlite"\nbackend = "postgres"\nurl = "{url}"\n'
                    '[embedding]\nprovider = "disabled"\n[connectors.filesystem.docs]\nroot = "docs"\n',
                    encoding="utf-8")
    return path


async def followed(*replicas: Harness) -> None:
    """Until each replica's own index is complete (SQL answers before: a different ranking)."""
    for harness in replicas:
        index = harness.index
        assert isinstance(index, ReplicaKeywordIndex)
        await harness.search(SearchRequest(query="note", mode="keyword"))  # starts the follower
        deadline = time.monotonic() + 60
        while not index.ready:
            assert time.monotonic() < deadline, "a replica's keyword index was not complete within 60 s"
            await anyio.sleep(0.05)


async def compacted(*replicas: Harness) -> None:
    """Until each replica, idle, has compacted its index (no replaced entries: Tantivy's BM25 statistics
    count them until then, so near-ties could swap against a fresh index)."""
    for harness in replicas:
        index = harness.index
        assert isinstance(index, ReplicaKeywordIndex)
        deadline = time.monotonic() + 60
        while replaced_entries(index.local.path):
            assert time.monotonic() < deadline, "an idle replica did not compact its keyword index within 60 s"
            await anyio.sleep(0.1)


async def results(harness: Harness) -> list[list[tuple[str, float]]]:
    """Every document each query matches (the corpus, at most 100 notes, fits the limit), ranked, with
    its score. Equal scores are put in id order: their order is Tantivy's, by segment."""
    out = []
    for query in QUERIES:
        hits = (await harness.search(SearchRequest(query=query, mode="keyword", limit=100))).results
        out.append(sorted(((h.id, h.score) for h in hits), key=lambda hit: (-hit[1], hit[0])))
    return out


def lock_held(harness: Harness) -> bool:
    with harness.store.db.connection() as conn:  # type: ignore[union-attr]
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                           "AND classid = %s AND objid = %s", (INDEX_LOCK >> 32, INDEX_LOCK & 0xFFFFFFFF)).fetchone()
    return bool(row[0])


async def test_a_killed_replica_and_one_with_a_gap_converge_to_a_fresh_one(workspace: Workspace, pg_url: str,
                                                                          child_env: dict[str, str]) -> None:
    write_notes(workspace.docs, 0, 80)
    configs = {name: replica(workspace, name, pg_url) for name in ("a", "b", "fresh", "fresh2")}
    async with Harness.open(config_mod.load(configs["a"])) as a:
        assert isinstance(a.index, ReplicaKeywordIndex)
        await a.sync()
        before = await results(a)
        progress, log = workspace.root / "b-rounds", workspace.root / "b.log"
        with open(log, "wb") as err:  # a file: a pipe could fill and block
            writer = subprocess.Popen([sys.executable, "-c", WRITER, str(configs["b"]), str(workspace.docs),
                                       " ".join(WORDS), str(progress)], env=child_env, cwd=workspace.root,
                                      stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 60
            rounds, searched = 0, 0
            while rounds < 3 or not lock_held(a):  # B synced a few rounds, and is mid-write: holds the lock
                assert writer.poll() is None, log.read_text(errors="replace")[-3000:]
                assert time.monotonic() < deadline, f"the writer replica made {rounds} rounds in 60 s"
                await a.search(SearchRequest(query=QUERIES[searched % len(QUERIES)], mode="keyword", limit=20))
                searched += 1  # load on A meanwhile
                rounds = int(progress.read_text() or 0) if progress.exists() else 0
            os.kill(writer.pid, signal.SIGKILL)
        finally:
            writer.kill()
            writer.wait(10)
        assert writer.returncode == -signal.SIGKILL
        await a.sync()  # what B left unsynced on disk, through A
        after_kill = await results(a)
        assert after_kill != before  # B's rounds changed what the queries find

        async with Harness.open(config_mod.load(configs["b"])) as b, \
                Harness.open(config_mod.load(configs["fresh"])) as fresh:
            await followed(b, fresh)
            await compacted(a, b)
            expected = await results(fresh)
            assert await results(b) == expected  # B caught up from its record after the kill
            assert await results(a) == expected

        # a gap: B is down while A writes, and the change log is trimmed past those writes
        write_notes(workspace.docs, 80, 20)
        (workspace.docs / "n005.md").unlink()
        await a.sync()
        with a.store.db.connection() as conn:  # type: ignore[union-attr]
            conn.execute("DELETE FROM changes WHERE seq < (SELECT max(seq) FROM changes)")
        async with Harness.open(config_mod.load(configs["b"])) as b, \
                Harness.open(config_mod.load(configs["fresh2"])) as fresh:
            await followed(b, fresh)
            await compacted(a, b)
            expected = await results(fresh)
            assert await results(b) == expected  # B rebuilt past the gap
            assert await results(a) == expected
