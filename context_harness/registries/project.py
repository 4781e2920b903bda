"""Where a config's project extensions live: its ``.ctx/`` folder. Apart from ``resolve`` so that
``apply`` can tell, importing nothing heavy, that a config has no registries and no project folder
(the common case: ``ctx search`` then imports no registry, Lua or agent code)."""

from __future__ import annotations

from pathlib import Path

from context_harness.config import Config


def project_folder(config: Config) -> Path:
    """The project's ``.ctx/`` folder: beside the config file, or the config's own folder."""
    base = config.base_dir
    return base if base.name == ".ctx" else base / ".ctx"


__all__ = ["project_folder"]
