"""Shared fixtures: a real workspace of Markdown files and a real Harness over it."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.config import Config

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Workspace:
    """A temp folder with ``docs/`` and a ``ctx.toml`` pointing at it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.docs = root / "docs"
        self.docs.mkdir()
        self.config_path = root / "ctx.toml"
        self.write_config()

    def write_config(self, extra: str = "") -> None:
        self.config_path.write_text(textwrap.dedent("""
            [db]
            path = "data/ctx.sqlite"

            [embedding]
            provider = "disabled"

            [connectors.filesystem.docs]
            root = "docs"
        """) + textwrap.dedent(extra), encoding="utf-8")

    def write(self, rel: str, text: str) -> Path:
        path = self.docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def config(self) -> Config:
        return config_mod.load_file(self.config_path)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


@pytest.fixture
def sample_docs(workspace: Workspace) -> Workspace:
    workspace.write("lua.md", """
        ---
        title: Lua Sandbox
        tags: [lua, security]
        updated: 2026-03-01
        ---
        # Ignored heading

        The sandbox stops running scripts after a timeout and caps their memory.
    """)
    workspace.write("guides/search.md", """
        # Search Engines

        Tantivy is a full-text search engine written in Rust. It ranks documents with BM25.
    """)
    workspace.write("notes.txt", "Plain notes about deployment and engines.\n")
    return workspace


def harness_factory() -> Callable:
    from context_harness.harness import Harness

    return Harness.open
