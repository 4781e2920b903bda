"""Agent test helpers: a config file in a temp folder with agent files beside it, and a fake context."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from context_harness import config as config_mod
from context_harness.agents import AgentRegistry, build_agent_registry
from context_harness.errors import NotFound


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

    def registry(self, toml: str = "", **kwargs: Any) -> AgentRegistry:
        self.config_path.write_text(textwrap.dedent(toml), encoding="utf-8")
        return build_agent_registry(config_mod.load_file(self.config_path), **kwargs)


@pytest.fixture
def ws(tmp_path: Path) -> AgentWorkspace:
    return AgentWorkspace(tmp_path)


DOCS = {
    "r1": {"id": "r1", "title": "Runbook: search down", "source": "filesystem:docs", "source_id": "rb.md",
           "score": 2.0, "snippet": "Run ctx sources first.", "body": "## Severity levels\n- sev1: page"},
    "r2": {"id": "r2", "title": "Severity policy", "source": "filesystem:docs", "source_id": "sev.md",
           "score": 1.0, "snippet": "sev2 means degraded.", "body": "sev2 means degraded."},
}


@dataclass
class FakeContext:
    """Canned search results; records every request."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)

    def search(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        self.requests.append(request)
        return [{k: v for k, v in d.items() if k != "body"} for d in DOCS.values()][: request.get("limit", 12)]

    def get(self, id: str) -> dict[str, Any]:
        self.fetched.append(id)
        if id not in DOCS:
            raise NotFound(f"document {id!r} not found")
        return dict(DOCS[id])

    def sources(self) -> list[dict[str, Any]]:
        return [{"name": "filesystem:docs", "document_count": 2}]


@pytest.fixture
def fake_context() -> FakeContext:
    return FakeContext()


WriteFn = Callable[[str, str], Path]


# -- a served workspace: docs, skills, TOML/Markdown/Lua agents beside ctx.toml (MCP, REST, CLI tests) --

SERVED_TOML = """
[db]
path = "data/ctx.sqlite"

[embedding]
provider = "disabled"

[server]
sync_on_start = false
{server}

[connectors.filesystem.docs]
root = "docs"

[agents.reviewer]
description = "Reviews code against the conventions."
tools = ["search"]
system_prompt = "You review {{{{language}}}} code."
arguments = [{{ name = "language", description = "Language", required = true, enum = ["python", "lua", "go"] }}]
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


def write_served(root: Path, server: str = "") -> Path:
    """Docs, a skill, TOML + Lua + Markdown agents and ctx.toml in ``root``; returns the config path."""
    files = {
        "docs/runbook.md": "# Runbook: search down\n\nCheck the search index first, then the sources.\n",
        "docs/severity.md": "# Severity policy\n\nsev1 pages the owner; sev2 is fixed within the day.\n",
        "skills/checklist/SKILL.md": "---\nname: checklist\ndescription: A review checklist.\n---\nCheck the tests.\n",
        "responder.lua": RESPONDER_LUA,
        "agents/debugger.md": CLAUDE_SUBAGENT,
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    config_path = root / "ctx.toml"
    config_path.write_text(SERVED_TOML.format(server=server), encoding="utf-8")
    return config_path


@pytest.fixture
def served_config(tmp_path: Path) -> Path:
    return write_served(tmp_path)


@pytest.fixture
async def served(served_config: Path):
    """An open, synced Harness over ``write_served``."""
    from context_harness.harness import Harness

    async with Harness.open(config_mod.load_file(served_config)) as harness:
        await harness.sync()
        yield harness


@pytest.fixture
def make_served():
    """``make_served(root, server="")`` -> config path (see ``write_served``)."""
    return write_served
