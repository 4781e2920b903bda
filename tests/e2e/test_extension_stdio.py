"""``run_server(setup)`` end to end: a team's script registers the example extension in code and
serves it over stdio; the real SDK client spawns it and sees the agent, tool and connector."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import mcp.types as t
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

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


GOOD_TOOL = '''
class Shout:
    name = "shout"
    title = None
    description = "Upper-case the text."
    input_schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    output_schema = None
    annotations = {"readOnlyHint": True}
    builtin = False

    async def call(self, arguments):
        return {"text": arguments["text"].upper()}
'''


def installed_packages(site: Path) -> None:
    """Two distributions as pip would leave them: one whose tool imports, one that raises on import."""
    (site / "good_ext.py").write_text(GOOD_TOOL, encoding="utf-8")
    (site / "broken_ext.py").write_text("raise RuntimeError('this package is broken on purpose')\n", encoding="utf-8")
    for dist, module, name in (("good_ext", "good_ext:Shout", "shout"), ("broken_ext", "broken_ext:Tool", "broken")):
        info = site / f"{dist}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", encoding="utf-8")
        (info / "entry_points.txt").write_text(f"[context_harness.tools]\n{name} = {module}\n", encoding="utf-8")


async def test_a_broken_extension_package_is_left_out_and_the_server_starts(tmp_path: Path, make_served) -> None:
    site = tmp_path / "site"
    site.mkdir()
    installed_packages(site)
    config_path = make_served(tmp_path)
    stderr = tmp_path / "stderr.txt"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": f"{site}:{REPO}"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "context_harness", "--config",
                                                                 str(config_path)], env=env, cwd=str(tmp_path))
    with stderr.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert "shout" in tools and "broken" not in tools and "search" in tools
            shouted = await client.call_tool("shout", {"text": "hi"})
            assert shouted.structured_content == {"text": "HI"}
    log = stderr.read_text(encoding="utf-8")
    assert "entry point 'broken' in context_harness.tools (broken_ext): cannot load broken_ext:Tool" in log
    assert "this package is broken on purpose" in log and "left out" in log
