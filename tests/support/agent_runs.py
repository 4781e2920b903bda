"""Workspaces for the tests of ``ctx agent run`` against the scripted chat server (``support.chat_server``).

``run_workspace(root, url)`` writes a knowledge base with one writable folder ``notes`` (holding
``permit.md``), a ``[models.local]`` at ``url`` and the agent ``filer`` (search, get, note_write);
``extra`` is appended to the ctx.toml (more agents, models, tools). ``PERMIT_ID`` is that note's id,
so a script can ``get`` it without asking the server first.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from context_harness.store.records import document_id

PERMIT = "# Shed permit\n\nThe shed permit needs a site plan and the council form.\n"
PERMIT_ID = document_id("filesystem:notes", "permit.md")
FILER_PROMPT = "You file notes in the knowledge base. Search before you write."
NOTE = {"source": "filesystem:notes", "path": "projects/meeting.md",
        "content": "Talked about the shed permit: the quokka crossing needs a sign."}


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


def steps_of(record: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in record["steps"] if s["kind"] == kind]


__all__ = ["FILER_PROMPT", "NOTE", "PERMIT", "PERMIT_ID", "run_workspace", "steps_of"]
