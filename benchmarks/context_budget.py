"""Characters an assistant receives for "search, then get the top hit", before and after paged `get`.

    python benchmarks/context_budget.py [--docs 8] [--doc-chars 220000] [--questions 80] [--mode keyword]

Builds a workspace of long generated Markdown manuals (API-reference style: nested headings, prose,
lists, fenced code; each section states one fact in a sentence of its own) and asks a fixed set of
questions, one per sampled fact. Each question is answered the way the tool descriptions teach: `search`
(limit 1), then `get` on the top hit, and the answer sentence is looked up in what came back:

- ``before``: `get {id}` as the seed answered it: the whole body, then every chunk's text again
  (measured as `get {id, max_chars: 0}`, which is that payload plus four small fields);
- ``after``: `get {id, chunk}` with the hit's chunk and the default budget (its section, at most
  `models.SECTION_CHARS`);
- ``after_no_chunk``: `get {id}` with the default budget but without the chunk (the first window only),
  to show what the chunk buys.

Sizes are characters of the JSON payload (what reaches the model's context), per question: mean, median,
max. ``answer_in_full`` counts questions whose top hit is the right document; ``answer_in_window``
those whose answer sentence lies in the returned body; ``answer_lost`` those where the full document held
it and the window did not (must be 0). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

import anyio

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.models import GetRequest, SearchRequest

TOPICS = ["filesystem", "network", "crypto", "process", "stream", "worker", "timer", "buffer", "module", "events",
          "console", "cluster"]
VOCAB = ("handle request response option callback promise error event descriptor path mode flag encoding offset "
         "length position signal timeout socket address port certificate cipher digest thread queue listener "
         "emitter chunk pipe backpressure").split()
FACTS = ["defaults to {n} milliseconds", "is ignored when the handle is closed", "must be a positive integer below {n}",
         "returns a promise that resolves to {n} entries", "throws ERR_OUT_OF_RANGE above {n}",
         "is deprecated since version {n}", "is read once at start-up and cached for {n} seconds"]


def ident(n: int) -> str:
    """A made-up identifier (letters only) naming one option of one section."""
    out = ""
    while True:
        n, d = divmod(n, 100)
        out += "bcdfghjklmnpqrstvwxz"[d // 5] + "aeiou"[d % 5]
        if n == 0:
            return out + "ix"


def manual(rng: random.Random, topic: int, chars: int, facts: list[tuple[str, str, str]]) -> str:
    name = TOPICS[topic % len(TOPICS)]
    parts = [f"# The {name} module\n\nReference for the {name} module, generated for the context-budget "
             "benchmark.\n"]
    size, section = len(parts[0]), 0
    while size < chars:
        option = ident(topic * 1000 + section)
        lines = [f"\n## {name}.{rng.choice(VOCAB)}{section}({rng.choice(VOCAB)}, options)\n"]
        for p in range(rng.randint(2, 6)):
            if p == 1:
                lines.append(f"\n### Options\n\n- `{rng.choice(VOCAB)}` {rng.choice(VOCAB)} {rng.choice(VOCAB)}\n"
                             f"- `{option}` see below\n")
            text = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(40, 160))).capitalize() + "."
            if p == 2:
                answer = f"The {option} option of {name} {rng.choice(FACTS).format(n=rng.randint(2, 900))}."
                facts.append((f"what does the {option} option of the {name} module do", answer, name))
                text += " " + answer
            lines.append("\n" + "\n".join(textwrap.wrap(text, 88)) + "\n")
        if section % 3 == 0:
            lines.append(f"\n```js\nconst {name} = require('{name}');\n{name}.call({section});\n```\n")
        chunk = "".join(lines)
        parts.append(chunk)
        size += len(chunk)
        section += 1
    return "".join(parts)


def flat(text: str) -> str:
    return " ".join(text.split())


def sizes(values: list[int]) -> dict[str, float]:
    return {"mean": round(statistics.mean(values)), "median": round(statistics.median(values)), "max": max(values)}


async def run(args: argparse.Namespace) -> dict:
    rng = random.Random(7)
    facts: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "docs").mkdir()
        for topic in range(args.docs):
            text = manual(rng, topic, args.doc_chars, facts)
            (root / "docs" / f"{TOPICS[topic % len(TOPICS)]}-{topic}.md").write_text(text, encoding="utf-8")
        (root / "ctx.toml").write_text('[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "disabled"\n\n'
                                       '[connectors.filesystem.docs]\nroot = "docs"\n', encoding="utf-8")
        questions = random.Random(11).sample(facts, min(args.questions, len(facts)))
        async with Harness.open(config_mod.load(root / "ctx.toml")) as h:
            await h.sync()
            return await measure(h, questions, args, root)


async def measure(h: Harness, questions: list[tuple[str, str, str]], args: argparse.Namespace, root: Path) -> dict:
    before, after, plain = [], [], []
    in_full = in_window = in_plain = lost = 0
    started = time.perf_counter()
    for question, answer, _ in questions:
        [hit] = (await h.search(SearchRequest(query=question, mode=args.mode, limit=1))).results
        full = (await h.get(GetRequest(id=hit.id, max_chars=0))).model_dump(mode="json")
        window = (await h.get(GetRequest(id=hit.id, chunk=hit.chunk))).model_dump(mode="json")
        first = (await h.get(GetRequest(id=hit.id))).model_dump(mode="json")
        before.append(len(json.dumps(full, ensure_ascii=False)))
        after.append(len(json.dumps(window, ensure_ascii=False)))
        plain.append(len(json.dumps(first, ensure_ascii=False)))
        found = flat(answer) in flat(full["body"])
        shown = flat(answer) in flat(window["body"])
        in_full += found
        in_window += shown
        in_plain += flat(answer) in flat(first["body"])
        lost += found and not shown
    corpus = sum(len(p.read_text(encoding="utf-8")) for p in (root / "docs").iterdir())
    return {
        "benchmark": "context_budget", "docs": args.docs, "corpus_chars": corpus, "questions": len(questions),
        "mode": args.mode, "get_max_chars": h.config.server.get_max_chars,
        "before_chars": sizes(before), "after_chars": sizes(after), "after_no_chunk_chars": sizes(plain),
        "reduction": round(statistics.mean(before) / statistics.mean(after), 1),
        "answer_in_full": in_full, "answer_in_window": in_window, "answer_in_first_window_no_chunk": in_plain,
        "answer_lost": lost, "seconds": round(time.perf_counter() - started, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=8)
    parser.add_argument("--doc-chars", type=int, default=220_000)
    parser.add_argument("--questions", type=int, default=80)
    parser.add_argument("--mode", default="keyword", choices=["keyword", "semantic", "hybrid"])
    print(json.dumps(anyio.run(run, parser.parse_args())))


if __name__ == "__main__":
    main()
