"""The bundled sample knowledge base: context-harness's own user guide as Markdown files."""

from __future__ import annotations

from pathlib import Path

from context_harness import config as config_mod
from context_harness.config import Config

DOCS = Path(__file__).parent / "docs"


def demo_config(workspace: Path | None = None) -> Config:
    """A config that indexes the bundled docs into ``workspace`` (default: the user data dir)."""
    folder = workspace or config_mod.user_data_dir() / "demo"
    return config_mod.from_dict(
        {
            "db": {"path": str(folder / "ctx.sqlite")},
            "connectors": {"filesystem": {"sample": {"root": str(DOCS)}}},
        },
        None,
    )
