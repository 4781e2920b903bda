"""``ctx recent`` and ``ctx related``: the real CLI in a subprocess over a synced knowledge base."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from context_harness.store.records import document_id
from support.workspace import write_knowledge_base


def ctx(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from context_harness.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=60)


def test_recent_and_related_print_text_and_json(tmp_path: Path) -> None:
    cfg = write_knowledge_base(tmp_path)
    (tmp_path / "docs" / "index.md").write_text("# Index\n\nRead [the notes](tantivy.md).\n", encoding="utf-8")
    assert ctx("sync", "--config", str(cfg)).returncode == 0
    recent = json.loads(ctx("recent", "--since", "1d", "--config", str(cfg), "--json").stdout)["changes"]
    assert {(c["source_id"], c["change"]) for c in recent} >= {("index.md", "added"), ("tantivy.md", "added")}
    tantivy = document_id("filesystem:docs", "tantivy.md")
    related = json.loads(ctx("related", tantivy, "--config", str(cfg), "--json").stdout)
    assert [i["source_id"] for i in related["linked_from"]] == ["index.md"]
    assert related["similar"] == [] and "disabled" in related["note"]
    human = ctx("related", tantivy, "--config", str(cfg))
    assert human.returncode == 0 and "Linked from:" in human.stdout and "index.md" in human.stdout
    bad = ctx("recent", "--since", "whenever", "--config", str(cfg))
    assert bad.returncode != 0 and "since" in bad.stderr
