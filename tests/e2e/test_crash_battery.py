"""Crash battery: syncs (filesystem, git and Lua sources together) and embedding runs are SIGKILLed at
random moments, at least 30 times in all: syncs until 24 were cut short (at least 30 trials, at most
70), and 8 embedding runs, at least 6 of them cut short. A sync is killed at a random point of the time
an uninterrupted sync of the same kind (first or incremental) just took, and an embedding run once a
random share of its chunks is committed (its JSON progress says), so the kills land mid-way on a fast
machine and a slow one alike. After each kill `ctx check` must pass, and the next complete sync must
give exactly what an uninterrupted sync of the same sources gives (documents, chunks, keyword entries,
search results). Bounded: every process has a timeout; the seed is fixed, so a failure replays.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.models import SearchRequest

pytestmark = pytest.mark.slow

SYNC_KILLS = 24  # syncs cut short, at least (trials go on until then, at most MAX_SYNC_TRIALS)
MAX_SYNC_TRIALS = 70
EMBED_TRIALS = 8
BATCH = 32  # chunks an embedding run commits at a time here (--batch-size 4: eight calls of 4 per commit)
LUA = """
connector = {name = "items"}
function connector.scan(config)
    return json.parse(fs.read("items.json"))
end
"""


def ctx(*args: str) -> list[str]:
    return [sys.executable, "-m", "context_harness", *args]


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True, timeout=60)


def words(rng: random.Random, n: int) -> str:
    return " ".join(f"w{rng.randrange(3000)}" for _ in range(n))


class Sources:
    """A folder of notes, a git repository and a Lua connector's items, changed a little between trials."""

    def __init__(self, root: Path, rng: random.Random, with_git: bool = True, docs: int = 400) -> None:
        self.root, self.rng, self.with_git = root, rng, with_git
        self.docs, self.repo, self.scripts = root / "docs", root / "upstream", root / "scripts"
        for i in range(docs):
            self.note(i)
        if with_git:
            (self.repo / "pages").mkdir(parents=True)
            for i in range(150):
                (self.repo / "pages" / f"p{i:03d}.md").write_text(f"# Page {i}\n\n{words(rng, 120)}\n")
            git("init", "-q", "-b", "main", cwd=self.repo)
            git("add", ".", cwd=self.repo)
            git("commit", "-qm", "first", cwd=self.repo)
            self.scripts.mkdir()
            (self.scripts / "items.lua").write_text(LUA)
            self.items = [{"source_id": f"i{i}", "title": f"Item {i}", "body": words(rng, 80)} for i in range(300)]
            self.write_items()

    def note(self, i: int) -> None:
        self.docs.mkdir(exist_ok=True)
        marker = " quagga" if i % 10 == 0 else ""  # a word few documents hold: a search finds them all
        (self.docs / f"n{i:04d}.md").write_text(f"# Note {i}\n\n{words(self.rng, 200)}{marker}\n\n## More\n\n"
                                                f"{words(self.rng, 200)}\n")

    def write_items(self) -> None:
        (self.scripts / "items.json").write_text(json.dumps(self.items))

    def config(self, data: str, embedding: str = "disabled") -> Path:
        text = (f'[db]\npath = "{data}/ctx.sqlite"\n[embedding]\nprovider = "{embedding}"\n'
                f'[connectors.filesystem.docs]\nroot = "docs"\n')
        if self.with_git:
            text += (f'[connectors.git.upstream]\nurl = "{self.repo.as_posix()}"\nbranch = "main"\n'
                     '[connectors.script.items]\npath = "scripts/items.lua"\n')
        path = self.root / f"{data}.toml"
        path.write_text(text)
        return path

    def change(self) -> None:
        """Edit, delete and add a few notes, pages and items (what the next sync has to apply)."""
        notes = sorted(self.docs.glob("*.md"))
        for path in self.rng.sample(notes, 40):
            path.write_text(f"# Edited {path.stem}\n\n{words(self.rng, 150)}\n")
        for path in self.rng.sample(notes, 5):
            path.unlink(missing_ok=True)
        for _ in range(5):
            self.note(1000 + self.rng.randrange(100_000))
        if self.with_git:
            pages = sorted((self.repo / "pages").glob("*.md"))
            for path in self.rng.sample(pages, 10):
                path.write_text(f"# Changed {path.stem}\n\n{words(self.rng, 100)}\n")
            git("add", "-A", cwd=self.repo)
            git("commit", "-qm", "change", cwd=self.repo)
            for item in self.rng.sample(self.items, 20):
                item["body"] = words(self.rng, 60)
            del self.items[:3]
            self.items += [{"source_id": f"n{self.rng.randrange(10**9)}", "title": "New", "body": words(self.rng, 50)}
                           for _ in range(3)]
            self.write_items()


def run(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def kill_during(args: list[str], env: dict[str, str], cwd: Path, delay: float) -> bool:
    """Start ``args``, SIGKILL it after ``delay`` seconds; True when it was still running then."""
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        return True


def kill_mid_embedding(args: list[str], env: dict[str, str], cwd: Path, rng: random.Random) -> bool:
    """Start an embedding run (``args`` without ``--progress``) and SIGKILL it once a random share of
    its chunks is committed, up to 0.3 s later (mid-batch); a run of a single batch is killed 0.5-2 s
    after it starts embedding. Driven by the run's JSON progress, not a fixed delay, so the kill lands
    mid-way on a fast machine too. True when it was still running then."""
    proc = subprocess.Popen([*args, "--progress", "json"], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    share, extra = rng.uniform(0.05, 0.75), rng.uniform(0.0, 0.3)
    guard = threading.Timer(180, proc.kill)  # bounded even if the run hangs
    guard.start()
    try:
        for line in proc.stderr:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "start" and event["total"] <= BATCH:
                extra = rng.uniform(0.5, 2.0)
                break
            if event.get("event") == "progress" and event["done"] >= share * event["total"]:
                break
        time.sleep(extra)
        if proc.poll() is not None:
            return False
        proc.send_signal(signal.SIGKILL)
        return True
    finally:
        guard.cancel()
        proc.wait(timeout=30)
        proc.stderr.close()


def snapshot(cfg: Path) -> dict[str, Any]:
    """What a sync produced: documents and their hashes, chunk ids, keyword entries, queue, search."""
    async def main() -> dict[str, Any]:
        async with Harness.open(config_mod.load_file(cfg)) as h:
            assert h.store is not None and h.index is not None
            # by body, not content_hash: a git document's hash covers its source_url, which names the
            # workspace's own clone
            docs = [(doc_id, source, source_id, hashlib.sha256(body.encode()).hexdigest())
                    for doc_id, source, source_id, body in h.store.connection().execute(
                        "SELECT id, source, source_id, body FROM documents ORDER BY id")]
            # the documents found, not their scores: BM25 statistics count deleted entries until Tantivy
            # merges them away, which differs with the history of any two indexes
            hits = await h.search(SearchRequest(query="quagga", mode="keyword", limit=100))
            return {"docs": docs, "chunks": h.store.all_chunk_ids(), "index": h.index.doc_id_counts(),
                    "queue": h.store.queued(), "search": sorted(r.id for r in hits.results)}

    return anyio.run(main)


def check_passes(cfg: Path, env: dict[str, str], cwd: Path) -> None:
    done = run(ctx("check", "--config", str(cfg)), env, cwd)
    assert done.returncode == 0 and done.stdout.startswith("consistent:"), done.stdout + done.stderr


def test_killed_syncs_leave_a_consistent_index_and_the_next_sync_repairs_it(tmp_path, child_env) -> None:
    rng = random.Random(1615)
    sources = Sources(tmp_path, rng)
    cfg, ref = sources.config("data"), sources.config("ref")
    killed = 0
    started = time.monotonic()
    done = run(ctx("sync", "--progress", "none", "--config", str(ref)), child_env, tmp_path)
    assert done.returncode == 0, done.stderr
    took = dict.fromkeys(("first", "change"), time.monotonic() - started)  # an uninterrupted sync's time
    for trial in range(MAX_SYNC_TRIALS):
        if killed >= SYNC_KILLS and trial >= 30:
            break
        kind = "first" if trial % 3 == 0 else "change"
        if kind == "first":
            shutil.rmtree(tmp_path / "data", ignore_errors=True)  # a first sync (clone included) killed
        else:
            sources.change()
        killed += kill_during(ctx("sync", "--progress", "none", "--config", str(cfg)), child_env, tmp_path,
                              rng.uniform(0.45, 0.95) * took[kind])
        check_passes(cfg, child_env, tmp_path)
        for config in (cfg, ref):
            synced = time.monotonic()
            done = run(ctx("sync", "--progress", "none", "--config", str(config)), child_env, tmp_path)
            assert done.returncode == 0, done.stderr
        if kind == "change":  # ref just applied the same changes as the killed sync, uninterrupted
            took["change"] = time.monotonic() - synced
        got, expected = snapshot(cfg), snapshot(ref)
        assert got == expected, f"trial {trial}: the index after a killed sync differs"
        assert got["queue"] == [] and set(got["index"].values()) == {1}
    assert killed >= SYNC_KILLS, f"only {killed} of {MAX_SYNC_TRIALS} syncs were killed mid-way"
    assert time.monotonic() - started < 1500


def test_killed_embedding_runs_leave_a_consistent_store(tmp_path, child_env, model_cache) -> None:
    env = {**child_env, "CTX_CACHE_DIR": str(model_cache)}
    rng = random.Random(1616)
    sources = Sources(tmp_path, rng, with_git=False, docs=150)
    cfg = sources.config("data", embedding="local")
    done = run(ctx("sync", "--no-embed", "--progress", "none", "--config", str(cfg)), env, tmp_path)
    assert done.returncode == 0, done.stderr
    killed = 0
    for _ in range(EMBED_TRIALS):
        killed += kill_mid_embedding(ctx("embed", "pending", "--batch-size", str(BATCH // 8), "--config", str(cfg)),
                                     env, tmp_path, rng)
        check_passes(cfg, env, tmp_path)
        sources.change()
        done = run(ctx("sync", "--no-embed", "--progress", "none", "--config", str(cfg)), env, tmp_path)
        assert done.returncode == 0, done.stderr
    assert killed >= 6, f"only {killed} of {EMBED_TRIALS} embedding runs were killed mid-way"
    done = run(ctx("embed", "pending", "--json", "--progress", "none", "--config", str(cfg)), env, tmp_path, 600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pending"] == 0
    check_passes(cfg, env, tmp_path)
    stats = json.loads(run(ctx("stats", "--json", "--config", str(cfg)), env, tmp_path).stdout)
    assert stats["embedding"]["pending_chunks"] == 0 and stats["embedding"]["embedded_chunks"] == stats["chunks"]
