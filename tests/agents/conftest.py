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
        kwargs.setdefault("discover", False)
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
