"""MkDocs hook (``hooks:`` in ``mkdocs.yml``): the reference pages are generated from the code and kept
in ``docs/reference/`` (``devtools/reference.py``); the build fails when one is stale, and when something
a user meets has no description (``devtools.markdown.Undocumented``)."""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # devtools/ is not installed; mkdocs runs from the repository root
    sys.path.insert(0, str(ROOT))

from devtools.markdown import Undocumented  # noqa: E402
from devtools.reference import WRITE_COMMAND, stale  # noqa: E402


def on_files(files: Files, config: MkDocsConfig) -> Files:
    try:
        behind = stale()
    except Undocumented as exc:
        raise PluginError(str(exc)) from None
    if behind:
        raise PluginError(f"{', '.join(behind)} no longer match the code; run `{WRITE_COMMAND}` and commit them")
    return files
