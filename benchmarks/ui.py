"""The web console on SciFact: first-page weight and a keyword search round trip.

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
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
        port = free_port()
        proc = subprocess.Popen([str(BIN / "ctx"), "serve", "--http", "--bind", f"127.0.0.1:{port}", "--config",
                                 str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            figures = measure(f"http://127.0.0.1:{port}", proc, texts)
            figures.update(in_browser(f"http://127.0.0.1:{port}", texts))
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    print(json.dumps({"benchmark": "ui", "corpus": "scifact", "documents": len(docs), "queries": len(texts),
                      "cpus": os.cpu_count(), **figures}))


if __name__ == "__main__":
    main()
