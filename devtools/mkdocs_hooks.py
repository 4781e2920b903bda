"""MkDocs hook (``hooks:`` in ``mkdocs.yml``): the reference pages are generated from the code on every
build, as virtual files, so they cannot drift from it and are never committed. Something a user meets
without a description fails the build (``devtools.markdown.Undocumented``)."""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # devtools/ is not installed; mkdocs runs from the repository root
    sys.path.insert(0, str(ROOT))

from devtools.markdown import Undocumented  # noqa: E402
from devtools.pages import PAGES  # noqa: E402


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for uri, make in PAGES.items():
        existing = files.get_file_from_path(uri)
        if existing is not None:
            raise PluginError(f"docs/{uri} is generated on every build; delete the file (edit the code instead)")
        try:
            content = make()
        except Undocumented as exc:
            raise PluginError(str(exc)) from None
        files.append(File.generated(config, uri, content=content))
    return files
