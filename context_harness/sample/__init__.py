"""The bundled sample knowledge base: context-harness's own documentation (``docs/`` of the repository).

A built wheel carries ``docs/`` as ``context_harness/sample/docs`` (hatch ``force-include`` in
pyproject.toml); a checkout or an editable install reads the repository's ``docs/`` in place, so the
sample is never a copy to keep in step."""

from __future__ import annotations

from pathlib import Path

from context_harness import config as config_mod
from context_harness.config import Config
from context_harness.errors import ConfigError

PACKAGED = Path(__file__).parent / "docs"
CHECKOUT = Path(__file__).resolve().parents[2]  # the repository root when running from a checkout


def _locate() -> Path:
    if PACKAGED.is_dir():
        return PACKAGED
    if (CHECKOUT / "mkdocs.yml").is_file() and (CHECKOUT / "docs").is_dir():
        return CHECKOUT / "docs"
    return PACKAGED


DOCS = _locate()
# The generated reference pages (devtools/pages.py) ship for `ctx help` but stay out of the demo's index:
# tables and JSON schemas, 40 % more chunks to embed on the first run and no better answers.
GENERATED = ("reference/config.md", "reference/cli.md", "reference/mcp-tools.md", "reference/errors.md")


def demo_config(workspace: Path | None = None) -> Config:
    """A config that indexes the bundled docs into ``workspace`` (default: the user data dir)."""
    if not DOCS.is_dir():
        raise ConfigError(f"the sample knowledge base is missing: neither {PACKAGED} nor a checkout's docs/ "
                          "folder exists; reinstall context-harness (pip install --force-reinstall)")
    folder = workspace or config_mod.user_data_dir() / "demo"
    return config_mod.from_dict(
        {
            "db": {"path": str(folder / "ctx.sqlite")},
            "connectors": {"filesystem": {"sample": {"root": str(DOCS), "exclude_globs": list(GENERATED)}}},
        },
        None,
    )
