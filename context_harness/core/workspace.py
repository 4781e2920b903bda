"""``ctx init``: a workspace folder with a commented config, a data folder and a .gitignore."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONFIG_TEMPLATE = '''# context-harness configuration. Every key is documented in the config reference: `ctx help config`
# prints it (docs/reference/config.md in a checkout).
# Relative paths resolve against this file's folder. ${VAR} and ${VAR:-default} expand everywhere.

[db]
# The SQLite file; the keyword index and other stores live beside it.
path = "data/ctx.sqlite"

[chunking]
# Estimated tokens per chunk (at most the default embedding model's 256-token window; 128 ranks best on
# SciFact train and the Node.js question sets, docs/benchmarks.md).
max_tokens = 128
overlap_tokens = 0

[retrieval]
final_limit = 12        # results returned when a search gives no limit
title_boost = 0.25      # weight of the title field (BM25 already favours short fields)

[server]
sync_on_start = true    # sync stale connectors in the background when the MCP server starts

# Index a folder of Markdown and text files. Copy this block for every folder you want searched.
[connectors.filesystem.docs]
root = "{root}"
# include_globs = ["**/*.md", "**/*.markdown", "**/*.mdx", "**/*.txt", "**/*.rst"]
#   (and PDF, DOCX, HTML, PPTX, XLSX, ODS, ODT, CSV, EPUB, notebooks, .eml and .mbox with the documents
#   extra: `ctx help documents`)
# exclude_globs = ["drafts/**"]
# respect_gitignore = true
# max_file_size = 2000000
'''

GITIGNORE = "# context-harness data: rebuilt by `ctx sync`\ndata/\n"


@dataclass
class InitResult:
    folder: Path
    config: Path
    created: list[Path]


def init_workspace(base: Path, root: str = "..") -> InitResult:
    """Create ``base/.ctx`` if missing. Existing files are never overwritten."""
    folder = base / ".ctx"
    created: list[Path] = []
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.toml"
    if not config.exists():
        config.write_text(CONFIG_TEMPLATE.replace("{root}", root), encoding="utf-8")
        created.append(config)
    data = folder / "data"
    if not data.exists():
        data.mkdir()
        created.append(data)
    gitignore = folder / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(GITIGNORE, encoding="utf-8")
        created.append(gitignore)
    return InitResult(folder, config, created)
