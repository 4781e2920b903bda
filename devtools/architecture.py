"""The map of the code: the layers of ``context_harness`` and which unit may import which. One table,
enforced by ``tests/test_architecture.py`` and drawn into ``docs/explanation/architecture.md``
(``python -m devtools.architecture --write`` redraws it; a test fails when the page is stale).

A unit is a subpackage of ``context_harness`` (``store``, ``cli``), a loose module (``errors``), or,
inside the two layer packages ``common`` and ``core``, one module of them (``core.harness``).
"""

from __future__ import annotations

import sys
from pathlib import Path

LAYER_PACKAGES = {"common", "core"}

# Lowest first. Each unit belongs to one layer; a unit imports only units its row in ALLOWED names.
LAYERS: dict[str, dict[str, str]] = {
    "base": {
        "common.redaction": "secrets scrubbed from every text that leaves the process",
        "common.timestamps": "the one stored form of a timestamp",
        "common.dates": "a document's own date (front matter, title, file name) and dates in words",
        "common.passages": "where chunks lie in a body; the windows get returns",
        "common.text": "text in any script: grapheme clusters, sentence ends, token estimates",
        "common.links": "links a document makes (Markdown, wikilinks)",
        "common.deadline": "a total time limit on a network exchange",
        "common.addresses": "whether an IP address is public, before connecting to it",
        "common.pipes": "framed messages to helper processes",
        "common.memory": "keeping a long-running process's memory flat",
        "common.validation": "untrusted arguments turned into validated ones",
        "common.jsonlimits": "JSON from outside parsed with its nesting bounded",
        "common.terminal": "text from elsewhere made safe to show at a terminal",
        "common.localsocket": "how the CLI asks a serving process of the same workspace",
        "common.lineage": "who started this process, and whether they still live (no orphans)",
        "common.analysis": "text analysis for keyword search by script and language",
        "common.symbols": "source code read as code: languages, syntax trees, symbol paths",
        "errors": "the error hierarchy and the one table mapping it to every rim",
        "config": "the config file as one validated object; ${VAR} expansion",
        "models": "the Pydantic models at the edges (MCP, REST, --json)",
        "__init__": "the version",
    },
    "domain": {
        "formats": "reading file formats (Markdown, reST, PDF, Office, EPUB, notebooks, e-mail)",
        "embedding": "embedders: the bundled model, multilingual-e5-small, fastembed, OpenAI-compatible",
        "store": "the storage seam: SQLite + Tantivy, or PostgreSQL",
        "connectors": "where documents come from: folders, git, S3, scripts",
        "ingest": "sync: scan, chunk, hash, store, embed",
        "search": "keyword, semantic and hybrid search, reranking, snippets",
        "lua": "the Lua sandbox, its workers and host calls",
        "agents": "agents: TOML, Markdown, Lua, Python; skills",
        "registries": "git extension registries: pins, consent, apply",
        "tools": "the one tool set: built-ins, Lua, agents' tools",
        "notes": "the file work of write-back: safe paths, atomic writes, trash",
        "sample": "the bundled sample knowledge base",
        "hooks": "client hooks: the session-start digest, session notes from transcripts",
    },
    "extension API": {
        "extensions": "the Python extension API (agents, tools, connectors in your own package)",
    },
    "core": {
        "core.context": "the context Lua tools and agents call back into",
        "core.catalog": "the tools and agents a knowledge base offers",
        "core.scripts": "trying and starting Lua scripts",
        "core.writeback": "the note calls",
        "core.activity": "what each source is doing in this process",
        "core.polling": "watching folders by listing them",
        "core.live": "the live index",
        "core.services": "what runs while serving",
        "core.local_reads": "the local socket: reads for the CLI beside a server",
        "core.connections": "recent, related, links and backlinks",
        "core.reports": "sources, stats and the server's description",
        "core.running": "agent runs: a chat model driven through an agent's tools",
        "core.offering": "agents, prompts and tools offered",
        "core.authoring": "agents and skills written as files",
        "core.harness": "Harness: the one core service",
        "core.recovery": "ctx check on a workspace that may not open",
        "core.workspace": "ctx init",
        "core.routing": "the tools of many workspaces served as one: routed, merged, labelled",
        "core.workspaces": "many workspaces served by one process, sharing the model and worker threads",
        "core.face": "the core's face: all that the rims use, in named parts",
    },
    "rims": {
        "server": "MCP (stdio, HTTP) and the REST shim; serves the console",
        "console": "the web console: pages over the core",
        "cli": "the ctx command line",
        "__main__": "python -m context_harness",
    },
}

RIMS = {"cli", "server", "console", "__main__"}
LOWER = {"errors", "config", "models", "common.validation", "common.timestamps", "common.passages", "common.text",
         "common.pipes",
         "common.memory", "common.redaction", "common.links", "common.deadline", "common.jsonlimits",
         "common.terminal", "common.localsocket", "common.analysis", "common.lineage",
         "common.symbols", "common.addresses", "common.dates"}
ALLOWED: dict[str, set[str]] = {
    "common.redaction": set(),
    "errors": {"common.redaction"},
    "common.timestamps": set(),
    "common.passages": {"common.text"},
    "common.text": set(),
    "common.links": set(),
    "common.deadline": set(),
    "common.addresses": set(),
    "common.pipes": set(),
    "common.memory": set(),
    "common.jsonlimits": set(),
    "common.terminal": set(),
    "common.localsocket": set(),
    "common.lineage": set(),
    "common.analysis": set(),
    "common.symbols": set(),
    "common.dates": {"common.timestamps"},
    "config": {"errors", "common.redaction", "common.analysis"},
    "models": {"errors", "common.timestamps"},
    "common.validation": {"errors", "models", "common.jsonlimits"},
    "formats": LOWER,
    "store": LOWER | {"embedding"},
    "embedding": LOWER,
    "ingest": LOWER | {"store", "connectors", "embedding", "formats"},
    "search": LOWER | {"store", "embedding"},
    "lua": LOWER | {"connectors"},
    "registries": LOWER | {"lua", "agents", "connectors"},
    "connectors": LOWER | {"formats"},
    "agents": LOWER | {"lua", "formats"},
    "tools": LOWER | {"lua", "agents", "registries"},
    "notes": LOWER,
    "core.context": LOWER,
    "core.writeback": LOWER | {"agents", "connectors", "formats", "notes", "store"},
    "core.scripts": LOWER | {"lua", "tools", "connectors", "core.context", "agents", "registries"},
    "core.catalog": LOWER | {"agents", "tools", "core.context"},
    "core.activity": LOWER,
    "core.polling": set(),
    "core.live": LOWER | {"core.activity", "connectors", "core.polling"},
    "core.local_reads": LOWER,
    "core.services": LOWER | {"core.catalog", "core.live", "core.local_reads"},
    "extensions": LOWER | {"agents", "tools", "connectors", "lua"},
    "core.connections": LOWER | {"store"},
    "core.reports": LOWER | {"connectors", "core.activity", "store", "embedding"},
    "core.running": LOWER | {"agents", "core.catalog", "store", "tools"},
    "core.offering": LOWER | {"agents", "core.catalog", "core.context", "core.scripts", "tools"},
    "core.authoring": LOWER | {"agents", "core.catalog", "core.context", "formats", "notes", "tools"},
    "core.harness": LOWER | {"store", "ingest", "search", "embedding", "connectors", "core.catalog", "core.services",
                             "extensions", "tools", "agents", "core.activity", "core.offering", "core.writeback",
                             "core.connections", "registries", "core.authoring", "core.reports",
                             "core.running"},
    "core.recovery": LOWER | {"core.harness", "extensions", "store"},
    "core.workspace": set(),
    "core.routing": LOWER | {"core.harness", "core.catalog", "agents", "tools", "search"},  # search: max_tokens
    "core.workspaces": LOWER | {"core.harness", "core.routing", "core.catalog", "agents", "tools", "extensions",
                                "ingest"},
    "sample": LOWER,
    "hooks": LOWER | {"store"},
    "core.face": LOWER | {"core.harness", "core.catalog", "core.writeback", "core.scripts", "core.recovery",
                          "core.workspace", "core.workspaces",
                          "core.authoring", "core.reports", "core.running", "agents", "tools",
                          "registries", "extensions", "sample", "connectors", "ingest", "search",
                          "store", "hooks"},  # store: the OAuth grant store (store.grants) the HTTP server keeps
    # The rims reach the core through its face alone (and each other: the CLI starts servers, the
    # server mounts the console).
    "console": LOWER | {"core.face"},
    "server": LOWER | {"core.face", "console"},
    "cli": LOWER | {"core.face", "server"},
    "__main__": {"cli"},
    "__init__": set(),
}


def layer_of(unit: str) -> str:
    return next(name for name, units in LAYERS.items() if unit in units)


def unit(module: str) -> str:
    """The unit of a dotted module name under ``context_harness``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    if parts[1] in LAYER_PACKAGES:  # a layer package's own __init__ holds only its docstring
        return f"{parts[1]}.{parts[2]}" if len(parts) > 2 else "__init__"
    return parts[1]


BEGIN, END = "<!-- map:begin (generated by devtools/architecture.py) -->", "<!-- map:end -->"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "explanation" / "architecture.md"


def drawing() -> str:
    """The map as Markdown: the layers top down, each unit with what it is and what it may import."""
    lines = [BEGIN, "", "| layer | unit | what it is | may import |", "|---|---|---|---|"]
    for layer in reversed(LAYERS):
        for name, what in LAYERS[layer].items():
            allowed = ALLOWED[name]
            named = ["the base layer"] if LOWER <= allowed else []
            named += [f"`{u}`" for u in sorted(allowed - LOWER if named else allowed)]
            lines.append(f"| {layer} | `{_path(name)}` | {what} | {', '.join(named) or 'nothing of ours'} |")
    return "\n".join([*lines, "", END])


def _path(name: str) -> str:
    if name.startswith("__"):
        return f"context_harness/{name}.py"
    if "." in name:
        return "context_harness/" + name.replace(".", "/") + ".py"
    folder = Path(__file__).resolve().parents[1] / "context_harness" / name
    return f"context_harness/{name}/" if folder.is_dir() else f"context_harness/{name}.py"


def page_with_map(text: str) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return head + drawing() + tail


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        PAGE.write_text(page_with_map(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(drawing())
