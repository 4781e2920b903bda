"""Workspaces on disk: documents and a ``ctx.toml`` in a temporary folder, in the shapes the tests use.

Every writer goes through ``write_files`` and ``config_toml``; the canned document sets differ
because the tests' assertions name their titles and texts.
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path
from typing import Any

from context_harness import config as config_mod
from context_harness.config import Config
from support.paths import EXAMPLES


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write ``{relative path: text}`` under ``root``, creating folders."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def config_toml(*, docs_root: str = "docs", embedding: str = "disabled", server: str | None = None,
                extra: str = "") -> str:
    """A ctx.toml: the database in ``data/``, one filesystem connector ``docs``, then ``extra``."""
    text = f'[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "{embedding}"\n\n'
    if server is not None:
        text += f"[server]\n{server}\n\n"
    return text + f'[connectors.filesystem.docs]\nroot = "{docs_root}"\n' + extra


# -- the core workspace: write documents one at a time -------------------------------------------

class Workspace:
    """A temp folder with ``docs/`` and a ``ctx.toml`` pointing at it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.docs = root / "docs"
        self.docs.mkdir()
        self.config_path = root / "ctx.toml"
        self.write_config()

    def write_config(self, extra: str = "") -> None:
        self.config_path.write_text(config_toml(extra=textwrap.dedent(extra)), encoding="utf-8")

    def write(self, rel: str, text: str) -> Path:
        path = self.docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def config(self) -> Config:
        return config_mod.load_file(self.config_path)


def write_sample_docs(workspace: Workspace) -> Workspace:
    """Three documents: front matter, a nested folder and a plain-text file."""
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


# -- a knowledge base for the server tests (MCP, REST) -------------------------------------------

KB_DOCS = {
    "tantivy.md": "# Tantivy notes\n\nTantivy is a full-text search engine library written in Rust. "
    "It ranks keyword matches with BM25 and supports stemming.\n",
    "lua/sandbox.md": "---\ntags: [lua, security]\n---\n# Lua sandbox\n\nScripts run in a sandboxed Lua runtime "
    "with instruction hooks and a memory cap, so a runaway loop stops.\n",
    "claude.md": "# Connecting Claude Desktop\n\nAdd the server to claude_desktop_config.json with the uvx command "
    "and restart Claude Desktop.\n",
    "notes.txt": "Plain text notes about embeddings and semantic search with MiniLM vectors.\n",
}


def write_knowledge_base(root: Path, server: str = "sync_on_start = false", embedding: str = "disabled") -> Path:
    """``KB_DOCS`` in ``root/docs`` and a ctx.toml in ``root``; returns the config path."""
    write_files(root / "docs", KB_DOCS)
    cfg = root / "ctx.toml"
    cfg.write_text(config_toml(embedding=embedding, server=server), encoding="utf-8")
    return cfg


# -- documents for the subprocess tests (the config names the docs folder by absolute path) -------

E2E_DOCS = {
    "tantivy.md": "# Tantivy notes\n\nTantivy is a full-text search engine library written in Rust.\n",
    "lua/sandbox.md": "# Lua sandbox\n\nScripts run in a sandboxed Lua runtime with instruction hooks.\n",
    "claude.md": "# Connecting Claude Desktop\n\nAdd the server to claude_desktop_config.json and restart.\n",
}


# -- a workspace with Lua tools (the shipped examples plus a test tool) ---------------------------

TOOL_DOCS = {
    "lua.md": "# Lua sandbox\n\nScripts run in a sandboxed Lua runtime with a memory cap and a wall-clock "
    "timeout, so a runaway loop stops.\n",
    "tantivy.md": "# Tantivy notes\n\nTantivy is a full-text search engine library written in Rust.\n",
}

# A tool whose behaviour is chosen by its arguments: success, script error, timeout.
MODES_TOOL = """
tool = {
  description = "Modes for tests",
  parameters = {
    { name = "mode", type = "string", required = true, enum = { "ok", "error", "spin", "sleep", "search" } },
    { name = "n", type = "integer", default = 2 },
  },
}
function tool.execute(params, context)
  if params.mode == "error" then error("deliberate failure") end
  if params.mode == "spin" then while true do end end
  if params.mode == "sleep" then sleep(30) end
  if params.mode == "search" then
    local hits = context.search("lua sandbox", { limit = params.n })
    return { count = #hits, first = hits[1] and hits[1].title }
  end
  return { mode = params.mode, n = params.n, config = context.config.label }
end
"""

TOOLS_TOML = """
[tools.script.echo]
path = "{examples}/echo.lua"
prefix = "> "

[tools.script.search_summary]
path = "{examples}/search_summary.lua"
max_chars = 60

[tools.script.modes]
path = "tools/modes.lua"
timeout = 0.5
label = "from-config"
"""


def writable_notes_config(root: Path) -> Config:
    """An empty writable folder ``root/notes`` as source ``notes`` (no embeddings, no sync on start)."""
    (root / "notes").mkdir()
    (root / "ctx.toml").write_text(
        '[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n[server]\nsync_on_start = false\n'
        '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n', encoding="utf-8")
    return config_mod.load(root / "ctx.toml")


def write_tools_workspace(root: Path, extra: str = "") -> Path:
    """``TOOL_DOCS``, ``tools/modes.lua`` and a ctx.toml with three Lua tools, then ``extra``."""
    write_files(root / "docs", TOOL_DOCS)
    write_files(root / "tools", {"modes.lua": MODES_TOOL})
    cfg = root / "ctx.toml"
    tools = TOOLS_TOML.format(examples=(EXAMPLES / "lua").as_posix())
    cfg.write_text(config_toml(server="sync_on_start = false", extra=tools + extra), encoding="utf-8")
    return cfg


# -- agents: files beside a ctx.toml ---------------------------------------------------------------

class AgentWorkspace:
    """``root/ctx.toml`` plus helpers to write agent files, skills and Lua scripts beside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config_path = root / "ctx.toml"

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def skill(self, name: str, description: str, instructions: str, folder: str = "skills") -> Path:
        return self.write(f"{folder}/{name}/SKILL.md",
                          f"---\nname: {name}\ndescription: {description}\n---\n{instructions}\n")

    def library(self, toml: str = "", **kwargs: Any) -> Any:
        from context_harness.agents import build_agent_library

        self.config_path.write_text(textwrap.dedent(toml), encoding="utf-8")
        return build_agent_library(config_mod.load_file(self.config_path), **kwargs)


# A served workspace: docs, a skill, TOML/Markdown/Lua agents beside ctx.toml (MCP, REST, CLI tests).
# The agents come last and the Lua one last of all: a test cuts the file at its table.
SERVED_AGENTS_TOML = """
[agents.reviewer]
description = "Reviews code against the conventions."
tools = ["search"]
system_prompt = "You review {{language}} code."
arguments = [{ name = "language", description = "Language", required = true, enum = ["python", "lua", "go"] }]
skills = ["checklist"]

[agents.script.responder]
path = "responder.lua"
timeout = 0.5
"""

RESPONDER_LUA = """
agent = {
  description = "Pre-searches runbooks",
  tools = {"search", "get"},
  arguments = {
    {name = "service", description = "Affected service", required = true},
    {name = "mode", enum = {"ok", "spin", "error", "bad"}, default = "ok"},
  },
}
function agent.resolve(args, config, context)
  if args.mode == "spin" then while true do end end
  if args.mode == "error" then error("deliberate failure") end
  if args.mode == "bad" then return {system = 42} end
  local hits = context.search({query = "runbook " .. args.service, limit = 2})
  local more = context.search({query = "severity", limit = 1})
  local doc = context.get(hits[1].id)
  return {system = "Incident on " .. args.service .. ". Runbook: " .. doc.title,
          messages = {{role = "user", content = "Found " .. #hits + #more .. " documents."}}}
end
return agent
"""

# A subagent file as published in public Claude Code collections: name, description, tools, model, color.
CLAUDE_SUBAGENT = """---
name: debugger
description: Debugging specialist for errors, test failures, and unexpected behavior. Use proactively when encountering any issues.
tools: Read, Edit, Bash, Grep, Glob
model: sonnet
color: red
---

You are an expert debugger specializing in root cause analysis.

When invoked:
1. Capture error message and stack trace
2. Identify reproduction steps
"""

SERVED_FILES = {
    "docs/runbook.md": "# Runbook: search down\n\nCheck the search index first, then the sources.\n",
    "docs/severity.md": "# Severity policy\n\nsev1 pages the owner; sev2 is fixed within the day.\n",
    "skills/checklist/SKILL.md": "---\nname: checklist\ndescription: A review checklist.\n---\nCheck the tests.\n",
    "responder.lua": RESPONDER_LUA,
    "agents/debugger.md": CLAUDE_SUBAGENT,
}


def write_served(root: Path, server: str = "") -> Path:
    """Docs, a skill, TOML + Lua + Markdown agents and ctx.toml in ``root``; returns the config path."""
    write_files(root, SERVED_FILES)
    config_path = root / "ctx.toml"
    config_path.write_text(config_toml(server=f"sync_on_start = false\n{server}", extra=SERVED_AGENTS_TOML),
                           encoding="utf-8")
    return config_path


def write_hostile_workspace(root: Path, server: str = "", writable: bool = False) -> Path:
    """``write_served`` plus ``KB_DOCS``, the agent tools and a Lua tool (``echo``): every kind of tool,
    prompt and resource, for the hostile-input batteries; ``writable``: the docs folder too, so the
    note tools are offered; returns the config path."""
    cfg = write_served(root, server=f"agent_tools = true\n{server}")
    if writable:
        text = cfg.read_text(encoding="utf-8")
        cfg.write_text(text.replace("[connectors.filesystem.docs]\n", "[connectors.filesystem.docs]\nwritable = true\n"),
                       encoding="utf-8")
    write_files(root / "docs", KB_DOCS)
    echo = (EXAMPLES / "lua" / "echo.lua").as_posix()
    cfg.write_text(cfg.read_text(encoding="utf-8") + f'\n[tools.script.echo]\npath = "{echo}"\nprefix = "> "\n',
                   encoding="utf-8")
    return cfg


# -- a long document (paged `get`) ----------------------------------------------------------------

_WORDS = ("stream buffer callback promise error event handle file descriptor path mode flag option "
          "directory link watcher permission encoding offset length position signal timeout").split()


def marker(n: int) -> str:
    """A made-up word found only in section ``n`` of ``long_markdown`` (letters only, so it stems to itself)."""
    letters = ""
    while True:
        n, digit = divmod(n, 26)
        letters += "abcdefghijklmnopqrstuvwxyz"[digit]
        if n == 0:
            return "zq" + letters + "x"


def long_markdown(target_chars: int = 262_000) -> str:
    """A Markdown manual of about ``target_chars`` characters: nested headings, paragraphs, lists, fenced
    code and non-ASCII text; section ``n`` holds ``marker(n)`` once, in a sentence of its own."""
    rng = random.Random(20)
    parts = ["# File system manual\n\nA generated manual, long like a real API reference. Ünïcödé, 日本語 and 🙂 "
             "appear throughout, so offsets count characters, not bytes.\n"]
    size, n = len(parts[0]), 0
    while size < target_chars:
        lines = [f"\n## Section {n}: {rng.choice(_WORDS)} {rng.choice(_WORDS)}\n"]
        if n % 3 == 0:
            lines.append(f"\n### Details of section {n}\n")
        for paragraph in range(rng.randint(2, 5)):
            words = [rng.choice(_WORDS) for _ in range(rng.randint(30, 140))]
            text = " ".join(words).capitalize() + "."
            if paragraph == 1:
                text += f" The {marker(n)} setting controls section {n} — naïve café."
            lines.append("\n" + "\n".join(textwrap.wrap(text, 90)) + "\n")
        if n % 4 == 0:
            lines.append(f"\n```js\nconst fd = open('file-{n}.txt', 'r');\n\nread(fd, buffer);\n```\n")
        if n % 5 == 0:
            lines.append("\n" + "".join(f"- {rng.choice(_WORDS)} {rng.choice(_WORDS)}\n" for _ in range(4)))
        section = "".join(lines)
        parts.append(section)
        size += len(section)
        n += 1
    return "".join(parts)


def write_long_document(root: Path, server: str = "sync_on_start = false", chunking: str = "") -> Path:
    """``KB_DOCS`` plus ``manual.md`` (``long_markdown()``) in ``root/docs``; returns the config path."""
    write_files(root / "docs", {**KB_DOCS, "manual.md": long_markdown()})
    cfg = root / "ctx.toml"
    cfg.write_text(config_toml(server=server, extra=f"\n[chunking]\n{chunking}\n" if chunking else ""),
                   encoding="utf-8")
    return cfg


def backend_config(workspace: Workspace, backend: str, url: str | None, *, embedding: str = "fake",
                   language: str | None = None) -> Config:
    """``workspace``'s config with one folder source ``docs`` on ``backend``: "embedded", "postgres" (keyword
    search from the replicas' own index) or "postgres-sql" (BM25 in SQL), PostgreSQL at ``url``."""
    db = 'path = "data/ctx.sqlite"\n'
    if backend != "embedded":
        db += f'backend = "postgres"\nurl = "{url}"\n'
        db += 'keyword_index = "database"\n' if backend == "postgres-sql" else ""
    source = f'language = "{language}"\n' if language else ""
    workspace.config_path.write_text(f'[db]\n{db}\n[embedding]\nprovider = "{embedding}"\n\n'
                                     f'[connectors.filesystem.docs]\nroot = "docs"\n{source}', encoding="utf-8")
    return workspace.config()
