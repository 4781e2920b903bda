"""The web console: on SciFact, first-page weight and a keyword search round trip; with ``--pages``,
the time of every page over the sample workspace.

    .venv/bin/python benchmarks/ui.py [--queries 200]

Writes the SciFact corpus (../shared/data/beir/scifact) as Markdown files, syncs it (keyword only),
starts ``ctx serve --http`` and measures over loopback:

- ``first_page_bytes``: what a browser fetches to show the search page: its HTML, the stylesheet
  and the vendored htmx scripts (uncompressed; the server sends no compression).
- ``search_ms_p50``/``p95``: ``GET /ui/search?q=...&mode=keyword`` as htmx sends it (the results
  fragment), request to last byte.
- ``browser_search_ms_p50``/``p95``: the same in headless Chromium (Debian's ``chromium``, driven by
  Playwright as ``tests/browser`` does): the query typed into the search page and submitted, until the
  results are on screen (htmx swaps them in). Left out, with the reason, when no Chromium is here.

Prints one JSON line. Targets (issue 31): first page <= 100 kB; search round trip <= 100 ms.

    .venv/bin/python benchmarks/ui.py --pages [--reads 20] [--embedding local|disabled]

times every page of the console instead, over the bundled sample workspace (context-harness's own
documentation, as ``ctx demo`` indexes it, embedded with the bundled model unless ``--embedding
disabled``), plus a writable notes folder and an agents folder so the note and agent pages have
something to show: ``GET`` over loopback, request to last byte, each page read ``--reads`` times after
one first read. Per page: ``first_ms`` (that first read), ``p50_ms`` and ``max_ms`` of the others, and
``kb`` of HTML; ``slowest`` names the slowest page by p50, and ``load_1min`` is the machine's load
average when the run ended. Target (issue 42): every page under 200 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
import scifact

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(http: httpx2.Client, proc: subprocess.Popen) -> None:
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline:
        try:
            if http.get("/health").status_code == 200:
                return
        except httpx2.TransportError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError("ctx serve --http did not come up")


def measure(url: str, proc: subprocess.Popen, texts: list[str]) -> dict:
    with httpx2.Client(base_url=url, timeout=30) as http:
        wait_up(http, proc)
        page = http.get("/ui/search")
        assets = ["/ui/static/console.css", "/ui/static/htmx.min.js", "/ui/static/console.js"]
        first_page = len(page.content) + sum(len(http.get(path).content) for path in assets)
        for text in texts[:20]:  # warm the index reader
            http.get("/ui/search", params={"q": text, "mode": "keyword"}, headers={"HX-Request": "true"})
        times = []
        for text in texts:
            t0 = time.perf_counter()
            response = http.get("/ui/search", params={"q": text, "mode": "keyword"}, headers={"HX-Request": "true"})
            times.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200 and "result(s)" in response.text, response.text[:300]
    return {"first_page_bytes": first_page, "search_ms_p50": round(scifact.percentile(times, 50), 2),
            "search_ms_p95": round(scifact.percentile(times, 95), 2)}


def in_browser(url: str, texts: list[str]) -> dict:
    """Search round trips in headless Chromium: type, submit, wait until the results replace the old."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"browser_skipped": "Playwright is not installed (pip install -e '.[test]')"}
    executable = os.environ.get("CTX_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(executable).exists():
        return {"browser_skipped": "no Chromium: install Debian's chromium package"}
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=args)
        page = browser.new_page()
        page.goto(f"{url}/ui/search?mode=keyword")
        for i, text in enumerate(texts[:20] + texts):
            # A marker inside the results: gone once htmx swaps new results in (or a full page loads).
            page.evaluate("() => document.getElementById('results')"
                          ".insertAdjacentHTML('afterbegin', '<i id=\"stale\"></i>')")
            page.fill("#q", text)
            t0 = time.perf_counter()
            page.press("#q", "Enter")
            page.wait_for_function("() => !document.getElementById('stale')"
                                   " && document.getElementById('results').textContent.includes('result')",
                                   timeout=15_000)
            if i >= 20:  # the first 20 warm the index reader and the browser
                times.append((time.perf_counter() - t0) * 1000)
        browser.close()
    return {"browser_search_ms_p50": round(scifact.percentile(times, 50), 2),
            "browser_search_ms_p95": round(scifact.percentile(times, 95), 2)}


NOTES = {
    "garden-shed/permit.md": "# Shed permit\n\nThe council's planning permit for the shed.\n",
    "plan.md": "# Garden plan\n\nFirst the [[garden-shed/permit]], then build the shed.\n",
}
AGENT = ("---\nname: guide\ndescription: Answers questions about context-harness from its docs.\n"
         "tools: search, get\narguments:\n- name: topic\n  description: What to explain\n---\n\n"
         "You explain {{topic}} from the documentation.\n")


def sample_workspace(root: Path, embedding: str) -> Path:
    """The sample knowledge base (the repository's docs/, as ``ctx demo`` indexes it), a writable notes
    folder and an agents folder; returns the config file."""
    from context_harness.sample import DOCS, GENERATED

    for rel, text in NOTES.items():
        (root / "notes" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "notes" / rel).write_text(text, encoding="utf-8")
    (root / "agents").mkdir()
    (root / "agents" / "guide.md").write_text(AGENT, encoding="utf-8")
    config = root / "ctx.toml"
    config.write_text(f'[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "{embedding}"\n'
                      '[server]\nsync_on_start = false\n[agents]\npaths = ["agents"]\n'
                      f'[connectors.filesystem.sample]\nroot = {json.dumps(DOCS.as_posix())}\n'
                      f"exclude_globs = {json.dumps(list(GENERATED))}\n"
                      '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n', encoding="utf-8")
    return config


def page_paths(http: httpx2.Client) -> dict[str, str]:
    """Every console page a user reaches by a link, at addresses found the way a user finds them."""
    from context_harness.sample import DOCS, GENERATED
    from context_harness.store.records import document_id

    permit = document_id("filesystem:notes", "garden-shed/permit.md")
    indexed = [p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")]
    biggest = max((rel for rel in indexed if rel not in GENERATED), key=lambda rel: (DOCS / rel).stat().st_size)
    doc = document_id("filesystem:sample", biggest)
    middle = http.get("/ui/search", params={"q": "sync", "mode": "keyword"}).text  # a hit's own link, at its chunk
    hit = middle.split('<a href="/ui/doc?id=', 1)[1].split('"', 1)[0].replace("&amp;", "&").split("#")[0]
    return {
        "login": "/ui/login",
        "search": "/ui/search",
        "search results": "/ui/search?q=how+do+I+connect+a+client&mode=keyword",
        "search hybrid": "/ui/search?q=how+do+I+connect+a+client",
        "explain": "/ui/search?q=how+do+I+connect+a+client&explain=1",
        "more results": "/ui/search?q=search&mode=keyword&limit=100",
        "document": f"/ui/doc?id={doc}",
        "document at a hit": f"/ui/doc?id={hit}",
        "note": f"/ui/doc?id={permit}",
        "note edit": f"/ui/notes/edit?id={permit}",
        "note new": "/ui/notes/new",
        "trash": "/ui/trash",
        "graph": "/ui/graph",
        "graph data": "/ui/graph.json",
        "graph of a note": f"/ui/graph?id={permit}",
        "tools": "/ui/tools",
        "tool form": "/ui/tools/search",
        "agents": "/ui/agents",
        "agent": "/ui/agents/guide?run=1&topic=sync",
        "agent builder": "/ui/new-agent",
        "agent edit": "/ui/agents/guide/edit",
        "runs": "/ui/runs",
        "sources": "/ui/sources",
    }


def time_pages(url: str, proc: subprocess.Popen, reads: int) -> dict:
    with httpx2.Client(base_url=url, timeout=60) as http:
        wait_up(http, proc)
        pages = {}
        for name, path in page_paths(http).items():
            t0 = time.perf_counter()
            first = http.get(path)  # the first view: of a document version it reads more
            first_ms = (time.perf_counter() - t0) * 1000
            assert first.status_code == 200, f"{name}: {path} answered {first.status_code}: {first.text[:300]}"
            times = []
            for _ in range(reads):
                t0 = time.perf_counter()
                answer = http.get(path)
                answer.read()
                times.append((time.perf_counter() - t0) * 1000)
            pages[name] = {"first_ms": round(first_ms, 1), "p50_ms": round(scifact.percentile(times, 50), 1),
                           "max_ms": round(max(times), 1), "kb": round(len(first.content) / 1000, 1)}
    slowest = max(pages, key=lambda name: pages[name]["p50_ms"])
    return {"pages": pages, "slowest": slowest, "slowest_p50_ms": pages[slowest]["p50_ms"],
            "pages_over_200_ms": sorted(n for n, f in pages.items() if f["p50_ms"] > 200)}


def serve(config: Path) -> tuple[str, subprocess.Popen]:
    port = free_port()
    proc = subprocess.Popen([str(BIN / "ctx"), "serve", "--http", "--bind", f"127.0.0.1:{port}", "--config",
                             str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return f"http://127.0.0.1:{port}", proc


def run_pages(reads: int, embedding: str) -> None:
    with tempfile.TemporaryDirectory(prefix="ctx-bench-ui-pages-") as tmp:
        root = Path(tmp)
        config = sample_workspace(root, embedding)
        t0 = time.perf_counter()
        subprocess.run([str(BIN / "ctx"), "sync", "--config", str(config), "--progress", "none"], check=True,
                       stdout=subprocess.DEVNULL)
        sync_seconds = time.perf_counter() - t0
        url, proc = serve(config)
        try:
            figures = time_pages(url, proc, reads)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        documents = sum(1 for _ in (root / "notes").rglob("*.md"))
    print(json.dumps({"benchmark": "ui-pages", "workspace": "sample", "embedding": embedding, "reads": reads,
                      "sync_seconds": round(sync_seconds, 1), "notes": documents, "cpus": os.cpu_count(),
                      "load_1min": round(os.getloadavg()[0], 2), "target_ms": 200, **figures}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pages", action="store_true", help="time every console page over the sample workspace")
    parser.add_argument("--reads", type=int, default=20, help="with --pages: reads of each page")
    parser.add_argument("--embedding", choices=("local", "disabled"), default="local",
                        help="with --pages: the sample workspace's embedder")
    args = parser.parse_args()
    if args.pages:
        run_pages(args.reads, args.embedding)
        return
    docs = scifact.corpus()
    texts = list(scifact.queries().values())[: args.queries]
    with tempfile.TemporaryDirectory(prefix="ctx-bench-ui-") as tmp:
        root = Path(tmp)
        scifact.write_markdown(docs, root / "docs")
        config = root / "ctx.toml"
        config.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                          '[server]\nsync_on_start = false\nwatch = false\n[connectors.filesystem.scifact]\n'
                          'root = "docs"\n', encoding="utf-8")
        subprocess.run([str(BIN / "ctx"), "sync", "--config", str(config), "--progress", "none"], check=True,
                       stdout=subprocess.DEVNULL)
        url, proc = serve(config)
        try:
            figures = measure(url, proc, texts)
            figures.update(in_browser(url, texts))
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    print(json.dumps({"benchmark": "ui", "corpus": "scifact", "documents": len(docs), "queries": len(texts),
                      "cpus": os.cpu_count(), **figures}))


if __name__ == "__main__":
    main()
