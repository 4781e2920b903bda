"""The shipped ``agents/`` examples resolve against a real Harness over the bundled sample docs."""

from __future__ import annotations

import tomllib
from functools import partial
from pathlib import Path

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.agents import build_agent_library
from context_harness.core.context import HarnessContext
from context_harness.core.harness import Harness
from context_harness.sample import DOCS
from support.paths import REPO

pytestmark = pytest.mark.anyio


def shipped_config(tmp_path: Path) -> config_mod.Config:
    """The demo config with agents/agents.toml pasted in, as if ctx.toml sat at the repository root."""
    agents = tomllib.loads((REPO / "agents" / "agents.toml").read_text(encoding="utf-8"))["agents"]
    raw = {
        "db": {"path": str(tmp_path / "ctx.sqlite")},
        "embedding": {"provider": "disabled"},
        "connectors": {"filesystem": {"sample": {"root": str(DOCS)}}},
        "agents": agents,
    }
    return config_mod.from_dict(raw, REPO / "ctx.toml")


async def test_agents_shipped_examples_resolve_over_the_sample(tmp_path: Path) -> None:
    config = shipped_config(tmp_path)
    library = build_agent_library(config)
    assert {(i.name, i.source) for i in library.list()} == {
        ("architect", "toml"), ("code-reviewer", "toml"), ("incident-responder", "lua"),
        ("onboarding", "markdown"), ("writer", "markdown")}
    assert [s.name for s in library.skills()] == ["incident-triage", "review-checklist"]

    async with Harness.open(config) as harness:
        await harness.sync()
        context = HarnessContext(harness)
        resolve = partial(library.resolve, context=context)

        prompt = await anyio.to_thread.run_sync(resolve, "incident-responder", {"service": "search"})
        assert context.searches == 2 and context.fetches == 1
        assert "sev2 incident affecting 'search'" in prompt.system
        assert "Runbooks for the context-harness server" in prompt.system  # pre-searched runbook
        assert "sev2`: search is degraded" in prompt.system               # fetched severity policy
        assert "### incident-triage" in prompt.system                     # its skill is active
        assert prompt.tools == ["search", "get"]
        assert prompt.messages[0].content == "We have a sev2 incident on search. Walk me through the first checks."

        reviewer = await anyio.to_thread.run_sync(resolve, "code-reviewer", {"language": "lua", "focus": "tests"})
        assert "The code under review is lua. Focus first on: tests." in reviewer.system
        assert "### review-checklist" in reviewer.system

        for name in ("architect", "onboarding", "writer"):
            prompt = await anyio.to_thread.run_sync(resolve, name, {})
            assert prompt.system and prompt.tools

        structured = await anyio.to_thread.run_sync(
            partial(library.compile, "incident-responder", {"service": "index", "severity": "sev1"},
                    "structured", context))
        assert structured["skills"][0]["name"] == "incident-triage"
        assert "sev1 incident affecting 'index'" in structured["system"]
        assert "Active Skills" not in structured["system"]

    onboarding = library.definition("onboarding")
    assert onboarding["metadata"] == {"model": "sonnet", "color": "green"}
    assert onboarding["tools"] == ["search", "get", "sources"]
    assert library.complete("incident-responder", "severity", "sev") == ["sev1", "sev2", "sev3"]
