"""``ctx search --max-tokens`` and ``ctx get --max-tokens`` as a user runs them (a real subprocess):
the payload ``--json`` prints within the budget, the same as the Harness gives, and the text says
what was left out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from context_harness.common.text import estimate_tokens, payload_tokens
from support.workspace import KB_DOCS, long_markdown, write_files, write_long_document


def ctx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from context_harness.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=60)


def test_search_and_get_with_max_tokens(tmp_path: Path) -> None:
    cfg = str(write_long_document(tmp_path))
    write_files(tmp_path / "docs", {f"more/{i}-{name}": text for i in range(4) for name, text in KB_DOCS.items()})
    assert ctx("sync", "--config", cfg).returncode == 0
    query = "search engine sandbox notes"
    full = json.loads(ctx("search", query, "--config", cfg, "--json").stdout)
    fitted = ctx("search", query, "--max-tokens", "300", "--config", cfg, "--json")
    assert fitted.returncode == 0, fitted.stderr
    payload = json.loads(fitted.stdout)
    assert payload_tokens(full) > 600 and payload_tokens(payload) <= 300
    kept = len(payload["results"])
    assert kept and [r["id"] for r in payload["results"]] == [r["id"] for r in full["results"][:kept]]
    assert payload["omitted"]["results"] == len(full["results"]) - kept
    text = ctx("search", query, "--max-tokens", "300", "--config", cfg).stdout
    assert f"({len(full['results']) - kept} more left out to fit --max-tokens)" in text
    assert estimate_tokens(text) <= 300

    manual = next(r["id"] for r in json.loads(ctx("search", "file system manual", "--config", cfg, "--json").stdout)
                  ["results"] if r["source_id"] == "manual.md")
    first = json.loads(ctx("get", manual, "--max-tokens", "400", "--config", cfg, "--json").stdout)
    assert payload_tokens(first) <= 400 and first["truncated"] and first["omitted"]["body_chars"] > 0
    after = ctx("get", manual, "--offset", str(first["next_offset"]), "--max-tokens", "400", "--config", cfg, "--json")
    second = json.loads(after.stdout)
    assert payload_tokens(second) <= 400
    assert first["body"] + second["body"] == long_markdown()[:second["range"]["end"]]
    human = ctx("get", manual, "--max-tokens", "400", "--config", cfg)
    assert f"next: ctx get {manual} --offset {first['next_offset']}" in human.stderr

    refused = ctx("search", query, "--max-tokens", "20", "--config", cfg)
    assert refused.returncode == 1 and "max_tokens" in refused.stderr and "300" in refused.stderr
