"""Real documentation the project did not write: the Node.js API docs, through MCP ``search`` over stdio.

    .venv/bin/python benchmarks/nodejs_docs.py [--docs DIR] [--limit 10] [--reuse DIR]

Needs Debian's ``nodejs-doc`` package (``apt-get install nodejs-doc``), whose Markdown lives in
``/usr/share/doc/nodejs/api``; skips with a message when it is absent. Copies the ``*.md`` files into
a temp workspace, syncs them with the bundled model (``ctx sync``), starts ``python -m
context_harness`` with the MCP SDK's stdio client and asks each question of
``nodejs_questions.json`` (written before the first run) with defaults, then each mode. A hit is a
result whose ``source_id`` is one of the question's answer files. Prints one JSON object: top-1 /
top-3 / top-10 hit rates and p50 latency per mode.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]  # `import mcp` finds the SDK

from mcp import Client, StdioServerParameters  # noqa: E402

DOCS = Path("/usr/share/doc/nodejs/api")
QUESTIONS = _HERE / "nodejs_questions.json"
SECTIONS = _HERE / "nodejs_sections.json"  # a hit: the answer file at the asked-for section
MODES: tuple[str | None, ...] = (None, "hybrid", "keyword", "semantic")


def workspace(root: Path, docs: Path) -> Path:
    folder = root / "nodejs"
    folder.mkdir()
    for md in sorted(docs.glob("*.md")):
        shutil.copyfile(md, folder / md.name)
    config = root / "ctx.toml"
    config.write_text(f'[db]\npath = "{(root / "data" / "ctx.sqlite").as_posix()}"\n'
                      '[server]\nsync_on_start = false\nwatch = false\n'
                      f'[connectors.filesystem.nodejs]\nroot = "{folder.as_posix()}"\n', encoding="utf-8")
    return config


def rank_of(results: list[dict[str, Any]], answers: set[str], section: str | None = None) -> int | None:
    """1-based rank of the first result from an answer file (None: not in the results); with
    ``section``, one whose heading path also holds it."""
    for i, result in enumerate(results, 1):
        if Path(result["source_id"]).name in answers and (section is None or section in (result.get("heading") or "")):
            return i
    return None


async def ask(config: Path, questions: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    """Per mode: top-1/3/10 hit rates and p50 over ``questions`` (each with ``answers`` and, for the
    section set, ``section``)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config", str(config)])
    out: dict[str, Any] = {}
    async with Client(params) as client:
        await client.call_tool("search", {"query": "warm up the model"})
        for mode in MODES:
            ranks: list[int | None] = []
            times: list[float] = []
            for question in questions:
                args: dict[str, Any] = {"query": question["q"], "limit": limit}
                if mode:
                    args["mode"] = mode
                started = time.perf_counter()
                found = (await client.call_tool("search", args)).structured_content or {}
                times.append(time.perf_counter() - started)
                ranks.append(rank_of(found.get("results", []), set(question["answers"]), question.get("section")))
            n = len(ranks)
            out[mode or "defaults"] = {
                **{f"top{k}": round(sum(1 for r in ranks if r is not None and r <= k) / n, 3) for k in (1, 3, 10)},
                "p50_ms": round(statistics.median(times) * 1000, 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--reuse", type=Path, default=None,
                        help="a folder this benchmark synced before (its ctx.toml): ask without syncing")
    args = parser.parse_args()
    if not any(args.docs.glob("*.md")):
        print(json.dumps({"skipped": f"no Markdown in {args.docs}: install Debian's nodejs-doc package "
                          "(apt-get install nodejs-doc) or pass --docs"}))
        return
    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    sections = [{"q": q["q"], "answers": [q["file"]], "section": q["section"]}
                for q in json.loads(SECTIONS.read_text(encoding="utf-8"))["questions"]]
    with tempfile.TemporaryDirectory(prefix="ctx-nodejs-bench-") as tmp:
        synced = None
        if args.reuse is not None:
            config = args.reuse / "ctx.toml"
        else:
            config = workspace(Path(tmp), args.docs)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "context_harness", "sync", "--config", str(config)], check=True,
                           capture_output=True)
            synced = round(time.perf_counter() - started, 1)
        result = anyio.run(ask, config, questions, args.limit)
        by_section = anyio.run(ask, config, sections, args.limit)
    print(json.dumps({"files": len(list(args.docs.glob("*.md"))), "questions": len(questions),
                      "sync_s": synced, **result, "sections": {"questions": len(sections), **by_section}}))


if __name__ == "__main__":
    main()
