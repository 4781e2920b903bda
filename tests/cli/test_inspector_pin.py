"""The MCP Inspector command the docs and `ctx doctor` print names the version the tests install
(tests/inspector/install.sh): an unpinned `npx @modelcontextprotocol/inspector` ran an old Inspector on Node 20."""

from __future__ import annotations

import re
from pathlib import Path

from context_harness.cli.doctor import INSPECTOR

REPO = Path(__file__).resolve().parents[2]


def test_every_printed_inspector_command_pins_the_version_the_tests_install() -> None:
    tested = re.search(r'^INSPECTOR_VERSION="([\d.]+)"$', (REPO / "tests/inspector/install.sh").read_text(),
                       re.MULTILINE)
    assert tested
    printed = [(str(path.relative_to(REPO)), found)
               for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
               for found in re.findall(r"npx @modelcontextprotocol/inspector\S*", path.read_text(encoding="utf-8"))]
    printed.append(("context_harness/cli/doctor.py", INSPECTOR.split()[1]))
    assert len(printed) >= 5
    pinned = f"@modelcontextprotocol/inspector@{tested.group(1)}"
    assert [(where, command) for where, command in printed if command.removeprefix("npx ") != pinned] == []
