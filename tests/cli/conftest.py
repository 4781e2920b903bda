"""Fixtures of the CLI tests that set clients up: a knowledge base to point them at, a home folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.workspace import E2E_DOCS, config_toml, write_files


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """A knowledge base's config file: ``kb/ctx.toml`` over ``kb/docs``."""
    write_files(tmp_path / "kb" / "docs", E2E_DOCS)
    config = tmp_path / "kb" / "ctx.toml"
    config.write_text(config_toml(), encoding="utf-8")
    return config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty home folder, ``tmp_path/home``."""
    (tmp_path / "home").mkdir()
    return tmp_path / "home"
