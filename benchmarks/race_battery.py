"""Write-back under a folder-swapping race: nothing outside the source may change.

    .venv/bin/python benchmarks/race_battery.py [--attempts 10000] [--seconds 1800] [--layer files|harness]

A workspace whose filesystem source ``notes`` is writable, and beside it (outside the source) a canary
tree of files named like the notes. While a second process swaps ``notes/race`` for a symlink to the
canary folder and back, and swaps single notes for symlinks to canary files (as a sync client or a
script could), each attempt runs, through the real ``Harness``, ``note_write race/xN.md`` ->
``note_move`` to ``race/yN.md`` -> ``note_delete`` -> ``note_restore``. Every call either succeeds or
fails with a clear error (``bad_request``/``conflict``); anything else is counted as ``other``.

At the end the canary tree's hash (names, kinds, modes, contents) must equal the one before, and no
trash entry may hold canary text. Prints one JSON object: attempts and outcomes per operation,
``outside_changed`` (files outside the source that changed, appeared or vanished), ``canary_in_trash``,
flips made, and seconds. Bounded by ``--seconds``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

CANARIES = 8
CANARY = "CANARY outside the source, must never change"

FLIPPER = r"""
import os, random, sys, time
race, outside, deadline = sys.argv[1], sys.argv[2], time.monotonic() + float(sys.argv[3])
real, link = race + "-real", race + "-link"
rng, flips = random.Random(7), 0
print("ready", flush=True)
while time.monotonic() < deadline and not os.path.exists(race + "-stop"):
    flips += 1
    time.sleep(rng.uniform(0, 0.004))
    try:  # the folder becomes a symlink to the canary folder, then comes back
        os.rename(race, real)
        os.symlink(outside, race)
        time.sleep(rng.uniform(0, 0.0005))
        os.unlink(race)
        os.rename(real, race)
    except OSError:
        pass
    time.sleep(rng.uniform(0, 0.004))
    target = os.path.join(race, "%s%d.md" % (rng.choice("xy"), flips % 8))
    try:  # a note becomes a symlink to a canary file of the same name, then goes
        os.symlink(os.path.join(outside, os.path.basename(target)), link)
        os.rename(link, target)
        time.sleep(rng.uniform(0, 0.0005))
        os.unlink(target)
    except OSError:
        pass
print(flips, flush=True)
"""


OPERATIONS = ("write", "move", "delete", "restore")


class Flipper:
    """The second process that swaps ``race`` and its notes for symlinks into ``outside``."""

    def __init__(self, race: Path, outside: Path, seconds: float) -> None:
        self.race = race
        self.process = subprocess.Popen([sys.executable, "-c", FLIPPER, str(race), str(outside), str(seconds)],
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline() == "ready\n"

    def stop(self) -> int:
        """Stop it; how many swaps it made."""
        Path(str(self.race) + "-stop").touch()
        return int(self.process.communicate(timeout=60)[0].strip() or 0)


def count(outcomes: dict[str, Counter[str]], operation: str, exc: Exception | None) -> None:
    """An outcome: ``ok``, a code the issue allows, or ``other`` (with the exception's type)."""
    code = "ok" if exc is None else getattr(exc, "code", None)
    if code not in ("ok", "bad_request", "conflict", "not_found"):
        outcomes[operation]["other:" + type(exc).__name__] += 1
        code = "other"
    outcomes[operation][str(code)] += 1
    if exc is not None and os.environ.get("RACE_DEBUG"):
        print(operation, code, exc, file=sys.stderr)


def tree_hash(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: relative path -> kind, mode and content hash (symlinks by target)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            what = "link " + os.readlink(path)
        elif path.is_dir():
            what = "dir"
        else:
            what = "file " + hashlib.sha256(path.read_bytes()).hexdigest()
        out[path.relative_to(folder).as_posix()] = f"{what} {info.st_mode:o}"
    return out


def make_workspace(work: Path) -> tuple[Path, Path]:
    """The config file and the canary folder."""
    (work / "notes" / "race").mkdir(parents=True)
    outside = work / "outside"
    outside.mkdir()
    for index in range(CANARIES):
        for name in (f"x{index}.md", f"y{index}.md"):
            (outside / name).write_text(f"{CANARY}: {name}\n", encoding="utf-8")
    config = work / "ctx.toml"
    config.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                      '[server]\nsync_on_start = false\n'
                      '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n', encoding="utf-8")
    return config, outside


async def attempt(harness: Any, models: Any, index: int, outcomes: dict[str, Counter[str]]) -> None:
    """One write -> move -> delete -> restore; each outcome counted by error code."""
    name = index % CANARIES

    async def call(operation: str, coro: Any) -> Any:
        try:
            result = await coro
        except Exception as exc:
            count(outcomes, operation, exc)
            return None
        count(outcomes, operation, None)
        return result

    written = await call("write", harness.note_write(models.NoteWriteRequest(
        source="notes", path=f"race/x{name}.md", content=f"attempt {index}", overwrite=True)))
    if written is None:  # refused at once: wait a moment, so attempts sample the swaps, not one window
        await anyio.sleep(random.uniform(0, 0.003))
        return
    moved = await call("move", harness.note_move(models.NoteMoveRequest(id=written.id, to=f"race/y{name}-{index}.md")))
    target = moved.id if moved is not None else written.id
    deleted = await call("delete", harness.note_delete(models.NoteDeleteRequest(id=target)))
    if deleted is not None:
        await call("restore", harness.note_restore(deleted.trash_id))


async def battery(work: Path, attempts: int, seconds: float) -> dict[str, Any]:
    from context_harness import config as config_mod
    from context_harness import models
    from context_harness.core.harness import Harness

    config_path, outside = make_workspace(work)
    before = tree_hash(outside)
    flipper = Flipper(work / "notes" / "race", outside, seconds)
    outcomes: dict[str, Counter[str]] = {op: Counter() for op in OPERATIONS}
    started = time.monotonic()
    done = 0
    try:
        async with Harness.open(config_mod.load(config_path)) as harness:
            while done < attempts and time.monotonic() - started < seconds:
                await attempt(harness, models, done, outcomes)
                done += 1
    finally:
        flips = flipper.stop()
    return report(work, outside, before, done, outcomes, flips, started)


def files_round(root: Path, data: Path, index: int, pending: list[Any], outcomes: dict[str, Counter[str]]) -> None:
    """One round at the file layer: write, move, delete, restore, each attempted."""
    from context_harness.notes import files, trash
    from context_harness.notes.paths import resolve

    def call(operation: str, fn: Any) -> Any:
        try:
            result = fn()
        except Exception as exc:
            count(outcomes, operation, exc)
            return None
        count(outcomes, operation, None)
        return result

    x, y = f"race/x{index % CANARIES}.md", f"race/y{index % CANARIES}.md"
    call("write", lambda: (resolve(root, x), files.write(root, x, f"round {index}\n", overwrite=True)))
    call("move", lambda: (resolve(root, x, naming=False), resolve(root, y), files.move(root, x, y)))
    entry = call("delete", lambda: (resolve(root, y, naming=False),
                                    files.delete(root, y, data, "filesystem:notes", None))[1])
    pending.extend([entry] if entry is not None else [])
    if pending:
        oldest: trash.TrashEntry = pending[0]
        if call("restore", lambda: (resolve(root, oldest.path), files.restore(root, data, oldest, oldest.path))):
            pending.pop(0)


def files_battery(work: Path, attempts: int, seconds: float) -> dict[str, Any]:
    _, outside = make_workspace(work)
    before = tree_hash(outside)
    flipper = Flipper(work / "notes" / "race", outside, seconds)
    outcomes: dict[str, Counter[str]] = {op: Counter() for op in OPERATIONS}
    pending: list[Any] = []
    started = time.monotonic()
    done = 0
    try:
        while min(sum(c.values()) for c in outcomes.values()) < attempts and time.monotonic() - started < seconds:
            files_round(work / "notes", work / "data", done, pending, outcomes)
            done += 1
            time.sleep(random.uniform(0, 0.001))  # rounds sample the swaps instead of one window
    finally:
        flips = flipper.stop()
    return report(work, outside, before, done, outcomes, flips, started)


def report(work: Path, outside: Path, before: dict[str, str], done: int, outcomes: dict[str, Counter[str]],
           flips: int, started: float) -> dict[str, Any]:
    after = tree_hash(outside)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    trash = work / "data" / "trash"
    kept = list(trash.rglob("*")) if trash.exists() else []
    in_trash = [p for p in kept if p.is_file() and CANARY.encode() in p.read_bytes()]
    return {"rounds": done, "attempts": {op: sum(c.values()) for op, c in outcomes.items()},
            "outcomes": {op: dict(c) for op, c in outcomes.items()}, "flips": flips,
            "outside_changed": changed, "canary_in_trash": [p.name for p in in_trash],
            "seconds": round(time.monotonic() - started, 1)}


def run(attempts: int, seconds: float, layer: str = "files") -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ctx-race-") as folder:
        if layer == "files":
            return files_battery(Path(folder), attempts, seconds)
        return anyio.run(battery, Path(folder), attempts, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=1800.0)
    parser.add_argument("--layer", choices=("files", "harness"), default="files")
    args = parser.parse_args()
    print(json.dumps(run(args.attempts, args.seconds, args.layer)))


if __name__ == "__main__":
    main()
