"""The agent library over TOML, Markdown and Python sources: listing, clashes, arguments, skills,
compiled/structured output, resources with paging, completion and reload."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from context_harness.agents import AgentPrompt
from context_harness.errors import BadRequest, ConfigError, NotFound

REVIEWER = """
    [agents.reviewer]
    description = "Reviews code"
    tools = ["search", "get"]
    system_prompt = "You review {{language}} code."
    arguments = [{ name = "language", description = "Language", required = true, enum = ["python", "go", "lua"] }]
"""

SUBAGENT = """
---
name: code-reviewer
description: Expert code review specialist. Proactively reviews code for quality, security, and maintainability.
tools: Read, Grep, Glob, Bash
model: sonnet
color: blue
---
You are a senior code reviewer ensuring high standards of code quality and security.

When invoked:
1. Run git diff to see recent changes
"""


def test_agents_toml_top_level_and_inline(ws: Any) -> None:
    reg = ws.library(REVIEWER + """
        [agents.inline.planner]
        description = "Plans work"
        system_prompt = "Plan it."
    """)
    infos = {i.name: i for i in reg.list()}
    assert [i.name for i in reg.list()] == ["planner", "reviewer"]
    assert infos["reviewer"].model_dump() == {
        "name": "reviewer", "description": "Reviews code", "tools": ["search", "get"], "source": "toml",
        "arguments": [{"name": "language", "description": "Language", "required": True}]}
    prompt = reg.resolve("reviewer", {"language": "go"})
    assert prompt == AgentPrompt(system="You review go code.", tools=["search", "get"], messages=[])
    assert reg.resolve("planner").system == "Plan it."
    assert reg.find("planner").source == "toml" and reg.find("nope") is None


def test_agents_markdown_claude_code_subagent_loads_unchanged(ws: Any) -> None:
    ws.write(".claude/agents/code-reviewer.md", SUBAGENT)
    ws.write("agents/README.md", "# My agents\n\nNot an agent: no front matter.\n")
    ws.write("agents/docs/writer.md", "---\ndescription: Writes\ntools:\n  - search\n---\nWrite well.\n")
    reg = ws.library()
    assert [i.name for i in reg.list()] == ["code-reviewer", "writer"]
    info = reg.find("code-reviewer")
    assert info.source == "markdown" and info.tools == ["Read", "Grep", "Glob", "Bash"]
    definition = reg.definition("code-reviewer")
    assert definition["metadata"] == {"model": "sonnet", "color": "blue"}
    assert definition["system_prompt"].startswith("You are a senior code reviewer")
    assert reg.resolve("code-reviewer").system.endswith("1. Run git diff to see recent changes")
    assert reg.find("writer").tools == ["search"]


def test_agents_python_agents_registered_in_code(ws: Any, agent_context: Any) -> None:
    class Summariser:
        name = "summariser"
        description = "Summarises a topic"
        tools = ["search"]
        arguments = [{"name": "topic", "required": True}]

        def resolve(self, arguments: dict[str, Any], context: Any) -> dict[str, Any]:
            hits = context.search({"query": arguments["topic"], "limit": 1})
            return {"system": f"Summarise {arguments['topic']} using {hits[0]['id']}."}

    class Broken:
        name = "broken"
        description = ""

        def resolve(self, arguments: dict[str, Any], context: Any) -> Any:
            raise RuntimeError("secret internals")

    reg = ws.library(extra_agents=[Summariser(), Broken()])
    assert reg.find("summariser").source == "python"
    prompt = reg.resolve("summariser", {"topic": "lua"}, agent_context)
    assert prompt.system == "Summarise lua using r1." and prompt.tools == ["search"]
    with pytest.raises(Exception) as err:
        reg.resolve("broken")
    assert err.value.code == "agent_error" and "secret" not in err.value.message


def test_agents_name_clashes_name_both_definitions(ws: Any) -> None:
    ws.write("agents/reviewer.md", "---\ndescription: x\n---\nBody\n")
    with pytest.raises(ConfigError) as err:
        ws.library(REVIEWER)
    message = err.value.message
    assert "agent 'reviewer' is defined twice" in message
    assert "[agents.reviewer] in" in message and "reviewer.md" in message
    (ws.root / "agents/reviewer.md").unlink()
    with pytest.raises(ConfigError, match=r"\[agents.a\] .* and \[agents.inline.a\]"):
        ws.library('[agents.a]\nsystem_prompt="x"\n[agents.inline.a]\nsystem_prompt="y"\n')


def test_agents_config_errors_name_key_paths(ws: Any) -> None:
    with pytest.raises(ConfigError, match=r"ctx.toml: .*agents.reviewer.system_promt: unknown key"):
        ws.library('[agents.reviewer]\nsystem_promt = "x"\n')
    with pytest.raises(ConfigError, match=r"agents.inline.x.tools"):
        ws.library('[agents.inline.x]\nsystem_prompt = "x"\ntools = 3\n')
    with pytest.raises(ConfigError, match=r"agents.page_size"):
        ws.library("[agents]\npage_size = 101\n")
    with pytest.raises(ConfigError, match=r"agents.oops: expected a table"):
        ws.library("[agents]\noops = 1\n")
    with pytest.raises(ConfigError, match="agent names must match"):
        ws.library('[agents."bad name"]\nsystem_prompt = "x"\n')


def test_agents_arguments_required_unknown_and_enum(ws: Any) -> None:
    reg = ws.library(REVIEWER)
    with pytest.raises(BadRequest, match="missing required argument 'language'"):
        reg.resolve("reviewer", {})
    with pytest.raises(BadRequest, match="missing required argument 'language'"):
        reg.compile("reviewer", {"language": ""}, "structured")
    with pytest.raises(BadRequest, match="unknown argument 'lang'"):
        reg.resolve("reviewer", {"language": "go", "lang": "go"})
    with pytest.raises(BadRequest, match="must be one of python, go, lua"):
        reg.resolve("reviewer", {"language": "cobol"})
    with pytest.raises(NotFound, match="did you mean 'reviewer'"):
        reg.resolve("reveiwer", {})
    assert reg.complete("reviewer", "language", "") == ["python", "go", "lua"]
    assert reg.complete("reviewer", "language", "G") == ["go"]
    assert reg.complete("reviewer", "other", "") == []


def _skilled(ws: Any, disabled: str = "[]") -> Any:
    ws.skill("checklist", "Review checklist", "1. Check tests.\n2. Check docs.")
    ws.skill("tone", "Tone of voice", "Be kind.")
    ws.skill("unused", "Not used", "Nothing.", folder="agents/skills")
    return ws.library(f"""
        [agents.reviewer]
        description = "Reviews"
        tools = ["search"]
        system_prompt = "You review code."
        skills = ["checklist", "tone"]
        disabled_skills = {disabled}
    """)


def test_agents_compiled_format_exact(ws: Any) -> None:
    reg = _skilled(ws)
    assert reg.compile("reviewer") == (
        'You are now acting as the agent "reviewer". Follow these instructions for the rest of this conversation.\n'
        "\n"
        "You review code.\n"
        "\n"
        "## Active Skills\n"
        "\n"
        "### checklist\n"
        "\n"
        "1. Check tests.\n2. Check docs.\n"
        "\n"
        "### tone\n"
        "\n"
        "Be kind.\n"
    )
    # the prompt (MCP prompts/get, REST) carries the same active skills after the system prompt
    assert reg.resolve("reviewer").system == (
        "You review code.\n\n## Active Skills\n\n### checklist\n\n1. Check tests.\n2. Check docs.\n\n### tone\n\nBe kind.")


def test_agents_structured_format_exact_and_disabled_skills(ws: Any) -> None:
    reg = _skilled(ws, disabled='["tone"]')
    assert reg.compile("reviewer", format="structured") == {
        "name": "reviewer",
        "system": "You review code.",
        "skills": [{"name": "checklist", "description": "Review checklist",
                    "instructions": "1. Check tests.\n2. Check docs."}],
        "tools": ["search"],
        "messages": [],
    }
    compiled = reg.compile("reviewer")
    assert "### checklist" in compiled and "tone" not in compiled and "Be kind" not in compiled
    assert reg.definition("reviewer")["skills"] == [
        {"name": "checklist", "description": "Review checklist", "enabled": True},
        {"name": "tone", "description": "Tone of voice", "enabled": False}]
    with pytest.raises(BadRequest, match="format must be one of compiled, structured"):
        reg.compile("reviewer", format="xml")


def test_agents_no_enabled_skill_omits_section(ws: Any) -> None:
    reg = _skilled(ws, disabled='["checklist", "tone"]')
    assert reg.compile("reviewer") == (
        'You are now acting as the agent "reviewer". Follow these instructions for the rest of this conversation.'
        "\n\nYou review code.\n")
    assert "Active Skills" not in reg.resolve("reviewer").system


def test_agents_unknown_skills_are_config_errors(ws: Any) -> None:
    ws.skill("checklist", "c", "x")
    with pytest.raises(ConfigError, match="unknown skill 'missing' .known: checklist"):
        ws.library('[agents.a]\nsystem_prompt = "x"\nskills = ["missing"]\n')
    with pytest.raises(ConfigError, match="disables skill 'checklist', which it does not list"):
        ws.library('[agents.a]\nsystem_prompt = "x"\ndisabled_skills = ["checklist"]\n')
    ws.skill("checklist", "c", "x", folder="agents/skills")
    with pytest.raises(ConfigError, match="skill 'checklist' is defined twice"):
        ws.library()


def test_agents_resources_paging_over_45_agents(ws: Any) -> None:
    toml = "".join(f'[agents.agent-{i:02d}]\ndescription = "Agent {i}"\nsystem_prompt = "P{i}"\n' for i in range(45))
    reg = ws.library(toml)
    pages, cursor = [], None
    while True:
        page = reg.list_resources(cursor)
        pages.append(page["resources"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [20, 20, 5]
    uris = [r["uri"] for p in pages for r in p]
    assert uris == [f"agent://agent-{i:02d}" for i in range(45)]  # sorted, no duplicates, no gaps
    assert pages[0][0] == {"uri": "agent://agent-00", "name": "agent-00", "description": "Agent 0",
                           "mimeType": "application/json"}
    assert len(reg.list_resources(page_size=500)["resources"]) == 45  # capped at 100
    with pytest.raises(BadRequest, match="invalid cursor"):
        reg.list_resources("not-a-cursor!")


def test_agents_resources_include_skills_and_read_json(ws: Any) -> None:
    reg = _skilled(ws)
    page = reg.list_resources(page_size=100)["resources"]
    assert [r["uri"] for r in page] == ["skill://checklist", "agent://reviewer", "skill://tone", "skill://unused"]
    definition = json.loads(reg.read_resource("agent://reviewer"))
    assert definition == {
        "name": "reviewer", "description": "Reviews", "source": "toml", "tools": ["search"], "arguments": [],
        "skills": [{"name": "checklist", "description": "Review checklist", "enabled": True},
                   {"name": "tone", "description": "Tone of voice", "enabled": True}],
        "system_prompt": "You review code.",
    }
    assert reg.read_resource("agent://reviewer") is reg.read_resource("agent://reviewer")  # cached text
    assert json.loads(reg.read_resource("skill://tone"))["instructions"] == "Be kind."
    for uri in ("agent://nope", "skill://nope", "ctx://documents/x"):
        with pytest.raises(NotFound):
            reg.read_resource(uri)


def test_agents_files_changing_invalidate_the_cache(ws: Any) -> None:
    path = ws.write("agents/helper.md", "---\ndescription: Helps\n---\nHelp.\n")
    reg = ws.library()
    assert not reg.changed() and not reg.refresh()
    old = reg.read_resource("agent://helper")
    path.write_text("---\ndescription: Helps more\n---\nHelp more.\n", encoding="utf-8")
    os.utime(path, ns=(1, 1))
    assert reg.changed()
    assert reg.reload() is True
    assert reg.read_resource("agent://helper") != old and reg.find("helper").description == "Helps more"
    ws.write("agents/second.md", "---\ndescription: Second\n---\nTwo.\n")
    assert reg.refresh() is True and reg.names() == ["helper", "second"]
    ws.skill("new-skill", "New", "Do it.")
    assert reg.refresh() is True and json.loads(reg.read_resource("skill://new-skill"))["name"] == "new-skill"
    assert not reg.changed()


def test_agents_default_paths_only_beside_a_config_file() -> None:
    from context_harness import config as config_mod
    from context_harness.agents import build_agent_library

    config = config_mod.from_dict({}, None)  # built in code: no "beside the config" folders
    assert build_agent_library(config).list() == []


def test_agents_refresh_keeps_old_definitions_when_a_file_breaks(ws: Any, caplog: Any) -> None:
    path = ws.write("agents/helper.md", "---\ndescription: Helps\n---\nHelp.\n")
    reg = ws.library()
    path.write_text("---\nname: bad name\n---\nx\n", encoding="utf-8")
    os.utime(path, ns=(7, 7))
    with caplog.at_level("ERROR"):
        assert reg.refresh() is False
    assert "agent names must match" in caplog.text
    assert reg.find("helper").description == "Helps" and not reg.changed()
