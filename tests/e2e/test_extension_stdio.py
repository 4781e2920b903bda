"""``run_server(setup)`` end to end: a team's script registers the example extension in code and
serves it over stdio; the real SDK client spawns it and sees the agent, tool and connector."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import mcp.types as t
import pytest
from mcp import Client, StdioServerParameters

from support.paths import REPO

pytestmark = pytest.mark.anyio

SCRIPT = """
import sys
sys.path.insert(0, {example!r})
from ctxh_example import ChangelogConnector, ReleaseNotesAgent, WordCount
from context_harness import config
from context_harness.extensions import prepare_server
from context_harness.server import run_server

cfg = config.load({config!r})
setup = prepare_server(cfg, agents=[ReleaseNotesAgent()], tools=[WordCount()],
                       connectors=[ChangelogConnector("changes", {{"path": {changelog!r}}}, cfg)], discover=False)
run_server(setup)
"""


@pytest.mark.slow
async def test_agents_mcp_stdio_run_server_with_extensions(tmp_path: Path, make_served) -> None:
    config_path = make_served(tmp_path)
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## 1.2.0\n\nAdded the release-notes agent.\n", encoding="utf-8")
    script = tmp_path / "my_harness.py"
    script.write_text(textwrap.dedent(SCRIPT.format(example=str(REPO / "examples" / "python-extension"),
                                                    config=str(config_path), changelog=str(changelog))))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(command=sys.executable, args=[str(script)], env=env, cwd=str(tmp_path))
    async with Client(params, mode="legacy") as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"word_count", "agent_list", "agent_get", "agent_inject", "search"} <= tools
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        assert prompts == ["debugger", "release-notes", "responder", "reviewer"]
        counted = await client.call_tool("word_count", {"text": "a b"})
        assert counted.structured_content["words"] == 2
        got = await client.get_prompt("release-notes", {"version": "1.2.0"})
        assert "You write release notes for version 1.2.0" in got.messages[0].content.text
        completion = await client.complete(t.PromptReference(name="release-notes"), {"name": "audience", "value": ""})
        assert completion.completion.values == ["users", "developers"]
        resources = [r.uri for r in (await client.list_resources()).resources]
        assert "agent://release-notes" in resources
