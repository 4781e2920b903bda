"""Workspaces for the tests of ``ctx agent run`` against the scripted chat server (``support.chat_server``).

``run_workspace(root, url)`` writes a knowledge base with one writable folder ``notes`` (holding
``permit.md``), a ``[models.local]`` at ``url`` and the agent ``filer`` (search, get, note_write);
``extra`` is appended to the ctx.toml (more agents, models, tools). ``PERMIT_ID`` is that note's id,
so a script can ``get`` it without asking the server first; ``FULL_SCRIPT`` searches, reads it, writes
``NOTE`` and answers. ``ctx(...)`` runs the CLI as a script does (stdin not a terminal).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from context_harness.store.records import document_id
from support.chat_server import message, tool_calls

PERMIT = "# Shed permit\n\nThe shed permit needs a site plan and the council form.\n"
PERMIT_ID = document_id("filesystem:notes", "permit.md")
FILER_PROMPT = "You file notes in the knowledge base. Search before you write."
TASK = "File the meeting notes about the shed permit"
NOTE = {"source": "filesystem:notes", "path": "projects/meeting.md",
        "content": "Talked about the shed permit: the quokka crossing needs a sign."}
FULL_SCRIPT = [tool_calls([("search", {"query": "shed permit"})]), tool_calls([("get", {"id": PERMIT_ID})]),
               tool_calls([("note_write", NOTE)]), message("Filed it under projects/meeting.md.")]


def run_workspace(root: Path, url: str | None, extra: str = "", model: str = "local", db: str = "",
                  model_keys: str = "") -> Path:
    """The workspace described above in ``root``; returns its ctx.toml. ``url`` None: no ``[models]``
    table; ``db``: more ``[db]`` lines; ``model_keys``: more lines of the ``[models]`` table."""
    (root / "notes").mkdir(parents=True, exist_ok=True)
    (root / "notes" / "permit.md").write_text(PERMIT, encoding="utf-8")
    config = root / "ctx.toml"
    head = f'[db]\npath = "data/ctx.sqlite"\n{db}\n[embedding]\nprovider = "disabled"\n\n' \
        '[server]\nsync_on_start = false\n\n[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n\n'
    models = f'[models.{model}]\nurl = "{url}"\nmodel = "{model}"\n{model_keys}\n' if url is not None else ""
    agent = ('[agents.filer]\ndescription = "Files notes"\ntools = ["search", "get", "note_write"]\n'
             f'system_prompt = "{FILER_PROMPT}"\n')
    config.write_text(head + models + agent + textwrap.dedent(extra), encoding="utf-8")
    return config


def ctx(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``ctx *args`` as a script runs it: stdin not a terminal, stdout and stderr captured."""
    environment = {**os.environ, "NO_COLOR": "1", **(env or {})}
    environment.pop("CTX_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "context_harness", *args], cwd=cwd, env=environment,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


def no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr


def synced(root: Path) -> None:
    done = ctx("sync", cwd=root)
    assert done.returncode == 0, done.stderr


def steps_of(record: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in record["steps"] if s["kind"] == kind]



__all__ = ["FILER_PROMPT", "FULL_SCRIPT", "NOTE", "PERMIT", "PERMIT_ID", "TASK", "ctx", "no_traceback", "run_workspace",
           "steps_of", "synced"]
