"""How fast ``ctx hook session-start`` answers Claude Code on a 10,000-note workspace (target <= 300 ms, issue 53),
and what it loads to do so.

    .venv/bin/python benchmarks/hooks.py [--notes 10000] [--runs 15]

Builds the workspace once in a temp folder: ``--notes`` generated Markdown notes, 10 of them pinned, 30 session
notes of the project ``widgetry`` in the hooks' inbox, keyword index only (``ctx sync --no-embed``, embeddings
disabled). Then, ``--runs`` times, starts ``ctx --config FILE hook session-start`` as Claude Code does (the hook's
JSON on stdin, from the project's folder) and times it from spawn to exit: wall and CPU (user + system) medians
and the slowest run. Also: the digest's size in estimated tokens, the time of the same call in process (open +
digest, no interpreter start), ``ctx --version`` as the floor of any ``ctx`` command, and whether the hook's
process imported pydantic, the validated config, onnxruntime or the embedding package (it should not).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CTX = Path(sys.executable).parent / "ctx"
WORDS = ("river stone cloud garden lamp window paper bridge forest harbor signal engine copper meadow lantern "
         "orbit pencil canvas marble thunder valley shadow crystal velvet anchor beacon compass desert").split()
WATCHED = ("pydantic", "context_harness.config", "onnxruntime", "context_harness.embedding.bundled")


def workspace(root: Path, notes: int) -> tuple[Path, Path]:
    """(config file, project folder) of a fresh workspace of ``notes`` notes, synced."""
    rng = random.Random(53)
    folder = root / "notes"
    for i in range(notes):
        area = folder / f"area{i % 50:02}"
        area.mkdir(parents=True, exist_ok=True)
        head = "---\ntags: [pinned]\n---\n" if i < 10 else ""
        words = " ".join(rng.choice(WORDS) for _ in range(60))
        (area / f"note{i:05}.md").write_text(f"{head}# Note {i}\n\n{words}\n", encoding="utf-8")
    sessions = folder / "sessions" / "widgetry"
    sessions.mkdir(parents=True)
    for day in range(30):
        (sessions / f"2026-11-{day + 1:02}-s{day:07}.md").write_text(
            f'---\ntitle: "Session 2026-11-{day + 1:02} · widgetry"\ndate: 2026-11-{day + 1:02}\n'
            f'tags: ["session", "project:widgetry"]\n---\n\n# Session 2026-11-{day + 1:02} · widgetry\n\n'
            f"## Asked\n\n- Make widget {day} faster\n", encoding="utf-8")
    config = root / "ctx.toml"
    config.write_text(f'[db]\npath = "{(root / "data" / "ctx.sqlite").as_posix()}"\n[embedding]\nprovider = '
                      f'"disabled"\n[connectors.filesystem.notes]\nroot = "{folder.as_posix()}"\nwritable = true\n'
                      '[hooks]\ninbox = "filesystem:notes"\n', encoding="utf-8")
    done = subprocess.run([str(CTX), "--config", str(config), "sync", "--no-embed", "--quiet"],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"ctx sync failed: {done.stderr[-500:]}")
    project = root / "code" / "widgetry"
    (project / ".git").mkdir(parents=True)
    return config, project


def event(project: Path) -> str:
    return json.dumps({"session_id": "bench", "transcript_path": str(project / "t.jsonl"), "cwd": str(project),
                       "hook_event_name": "SessionStart", "source": "startup"})


def timed(command: list[str], stdin: str, cwd: Path) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=cwd, timeout=60)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"{command} failed: {done.stderr[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def loaded_modules(config: Path, project: Path) -> dict[str, bool]:
    """Which of ``WATCHED`` the hook's process imported (the CLI's own entry point, then a look at sys.modules)."""
    probe = ("import sys, atexit\nfrom context_harness.cli import main\n"
             f"atexit.register(lambda: sys.stderr.write('LOADED ' + ' '.join(m for m in {WATCHED!r} "
             "if m in sys.modules)))\n"
             f"sys.argv = ['ctx', '--config', {str(config)!r}, 'hook', 'session-start']\nmain()\n")
    done = subprocess.run([sys.executable, "-c", probe], input=event(project), capture_output=True, text=True,
                          cwd=project, timeout=60)
    line = next((x for x in done.stderr.splitlines() if x.startswith("LOADED")), "LOADED")
    names = line.split()[1:]
    return {m: m in names for m in WATCHED}


def in_process(config: Path, project: Path, runs: int) -> float:
    from context_harness.hooks.events import load_settings, start_context

    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        start_context(json.loads(event(project)), load_settings(str(config), None))
        samples.append(time.perf_counter() - start)
    return round(statistics.median(samples) * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    from context_harness.common.text import estimate_tokens

    with tempfile.TemporaryDirectory(prefix="ctx-bench-hooks-") as scratch:
        started = time.perf_counter()
        config, project = workspace(Path(scratch), args.notes)
        build_s = time.perf_counter() - started
        command = [str(CTX), "--config", str(config), "hook", "session-start"]
        timed(command, event(project), project)  # warm the page cache once
        samples = [timed(command, event(project), project) for _ in range(args.runs)]
        output = json.loads(samples[-1][2])["hookSpecificOutput"]["additionalContext"]
        floor = [timed([str(CTX), "--version"], "", project) for _ in range(5)]
        result = {
            "benchmark": "hooks", "notes": args.notes, "runs": args.runs, "cores": os.cpu_count(),
            "workspace_build_s": round(build_s, 1),
            "session_start_wall_ms": {"p50": round(statistics.median(s[0] for s in samples) * 1000, 1),
                                      "max": round(max(s[0] for s in samples) * 1000, 1)},
            "session_start_cpu_ms_p50": round(statistics.median(s[1] for s in samples) * 1000, 1),
            "ctx_version_wall_ms_p50": round(statistics.median(s[0] for s in floor) * 1000, 1),
            "in_process_ms_p50": in_process(config, project, args.runs),
            "context_tokens": estimate_tokens(output), "budget_tokens": 2000,
            "loaded": loaded_modules(config, project),
            "target_ms": 300,
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
