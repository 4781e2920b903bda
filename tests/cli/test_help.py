"""`ctx help`: every page it lists has a title, and a page the site builds from a root file (the changelog,
the reliability notes) prints that file's text, not mkdocs' snippet line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from context_harness.cli.help import docs_folder, pages, text, title

REPO = Path(__file__).resolve().parents[2]


def test_every_topic_ctx_help_lists_has_a_title(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    listing = subprocess.run([sys.executable, "-m", "context_harness", "help"], capture_output=True, text=True,
                             env=env, timeout=60, check=True).stdout
    rows = listing.split("\n\n")[0].splitlines()
    assert len(rows) == len(pages(docs_folder())) > 30
    untitled = [row for row in rows if not re.fullmatch(r"\S+ {2,}\S.*", row)]
    assert untitled == []
    assert re.search(r"^changelog +Changelog$", listing, re.MULTILINE)
    assert re.search(r"^explanation/reliability +Reliability and security$", listing, re.MULTILINE)
    shown = subprocess.run([sys.executable, "-m", "context_harness", "help", "changelog"], capture_output=True,
                           text=True, env=env, timeout=60, check=True).stdout
    assert shown == (REPO / "CHANGELOG.md").read_text(encoding="utf-8").rstrip("\n") + "\n"


def test_a_page_whose_included_file_is_not_shipped_says_so_and_is_named_by_its_file(tmp_path: Path) -> None:
    page = tmp_path / "release-notes.md"
    page.write_text('--8<-- "NOT-SHIPPED.md"\n', encoding="utf-8")
    assert title(page) == "Release notes"
    assert text(page) == ("This page is NOT-SHIPPED.md at the root of the source repository, which the package "
                          "does not ship; read it in a checkout of the source.\n")
