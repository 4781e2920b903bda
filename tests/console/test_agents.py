"""The console's agent editor and "Try it" through the real HTTP app under uvicorn: an agent built in
the form (with a skill added on the spot and one switched off) is a Claude Code subagent file that
MCP clients see at once and resolve to exactly what the page shows; per-field errors, conflicts,
read-only mode and CSRF refuse to write; every value is escaped."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.agents.skills import load_skill
from context_harness.config import UiConfig
from context_harness.errors import ConfigError
from context_harness.formats.markdown import split_front_matter
from support.console import client, csrf_of
from support.workspace import write_served

PAYLOAD = '<script>alert("agent")</script><img src=x onerror="alert(2)">'


@pytest.fixture
def zoo_config(tmp_path: Path) -> Path:
    """``write_served`` (TOML, Lua and Markdown agents, skill ``checklist``) with AgentZoo's tools on."""
    return write_served(tmp_path, server='compat = ["agentzoo"]')



def block(page: str, element_id: str) -> str:
    """The unescaped text of ``<pre ... id=element_id>``."""
    match = re.search(rf'<pre class="body" id="{element_id}">(.*?)</pre>', page, re.S)
    assert match, f"no #{element_id} on the page"
    return html.unescape(match.group(1))


def agent_form(csrf: str, **fields) -> dict:
    base = {"csrf": csrf, "name": "", "description": "", "system_prompt": "", "tools": "", "arguments": "",
            "version": "", "new_skill_name": "", "new_skill_category": "", "new_skill_description": "",
            "new_skill_instructions": "", "action": "save"}
    return base | fields


def agent_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "agents").iterdir())


@pytest.mark.anyio
async def test_an_agent_built_in_the_form_is_what_mcp_clients_get(zoo_config: Path, start_server):
    root = zoo_config.parent
    server = start_server(config_mod.load_file(zoo_config))
    with client(server) as ui:
        listing = ui.get("/ui/agents")
        assert 'id="new-agent" href="/ui/new-agent"' in listing.text
        assert 'class="edit-agent" href="/ui/agents/debugger/edit"' in listing.text
        assert "/ui/agents/reviewer/edit" not in listing.text and listing.text.count("(read-only here)") == 2
        assert "[agents.reviewer] in ctx.toml" in listing.text and "[agents.script.responder] (responder.lua)" in listing.text
        page = ui.get("/ui/new-agent")
        assert page.status_code == 200 and 'id="agent-form"' in page.text and 'id="new-skill"' in page.text
        csrf = csrf_of(page.text)
        typed = {"name": "helper", "description": "Helps with one topic.", "tools": "search, get",
                 "system_prompt": "You help with {{topic}}.\nBe brief.", "arguments": "topic: What to help with (required)"}
        added = ui.post("/ui/new-agent", data=agent_form(
            csrf, **typed, use_skill=["checklist"], enable_skill=["checklist"], action="add_skill",
            new_skill_name="tester", new_skill_category="Quality", new_skill_description="Writes tests.",
            new_skill_instructions="Write a failing test first."))
        assert added.status_code == 200, added.text
        skill = load_skill(root / "skills" / "tester" / "SKILL.md")
        assert (skill.category, skill.description, skill.instructions) == ("Quality", "Writes tests.",
                                                                            "Write a failing test first.")
        text = added.text
        assert "skill &#39;tester&#39; written to skills/tester/SKILL.md" in text
        assert '<h3 class="skill-category">Quality</h3>' in text and '<h3 class="skill-category">Uncategorised</h3>' in text
        assert text.index("Quality</h3>") < text.index('data-skill="tester"') and 'data-skill="checklist"' in text
        for box in ("use-tester", "enable-tester", "use-checklist"):
            assert re.search(rf'id="{box}"[^>]*checked', text), box
        assert 'value="helper"' in text and "You help with {{topic}}.\nBe brief.</textarea>" in text
        assert 'id="new_skill_name" name="new_skill_name" value=""' in text
        saved = ui.post("/ui/new-agent", data=agent_form(
            csrf, **typed, use_skill=["checklist", "tester"], enable_skill=["tester"]))
        assert saved.status_code == 303 and saved.headers["location"] == "/ui/agents/helper/edit?saved=1"
        edit = ui.get(saved.headers["location"])
        assert re.search(r'id="saved"[^>]*>Saved to agents/helper\.md\.', edit.text)
        assert not re.search(r'id="enable-checklist"[^>]*checked', edit.text)
        meta, body = split_front_matter((root / "agents" / "helper.md").read_text(encoding="utf-8"))
        assert meta == {"name": "helper", "description": "Helps with one topic.", "tools": "search, get",
                        "skills": ["checklist", "tester"], "disabled_skills": ["checklist"],
                        "arguments": [{"name": "topic", "description": "What to help with", "required": True}]}
        assert body.strip() == "You help with {{topic}}.\nBe brief."
        tried = ui.get("/ui/agents/helper", params={"run": "1", "topic": "flaky tests"})
        assert tried.status_code == 200 and tried.text.count('class="copy"') == 4
        shown = {i: block(tried.text, i) for i in ("prompt-get", "inject-compiled", "inject-structured",
                                                   "compiled-prompt")}
    assert "You help with flaky tests." in shown["prompt-get"] and "Write a failing test first." in shown["prompt-get"]
    assert "Check the tests." not in shown["prompt-get"]  # checklist is switched off
    async with Client(f"{server.url}/mcp", mode="legacy") as mcp:  # no restart: the new agent is served
        assert "helper" in [p.name for p in (await mcp.list_prompts()).prompts]
        got = await mcp.get_prompt("helper", {"topic": "flaky tests"})
        assert [m.content.text for m in got.messages] == [shown["prompt-get"]]
        for fmt in ("compiled", "structured"):
            result = await mcp.call_tool("agent_zoo_inject", {"agentId": "helper", "format": fmt,
                                                              "arguments": {"topic": "flaky tests"}})
            assert result.content[0].text == shown[f"inject-{fmt}"]
    compiled = json.loads(shown["inject-compiled"])["prompt"]
    assert shown["compiled-prompt"] == compiled
    assert "### tester\nWrite a failing test first." in compiled and "### checklist" not in compiled
    assert [s["name"] for s in json.loads(shown["inject-structured"])["skills"]] == ["tester"]


def test_a_bad_field_is_named_and_nothing_is_written(zoo_config: Path, start_server):
    root = zoo_config.parent
    server = start_server(config_mod.load_file(zoo_config))
    before = agent_files(root)
    with client(server) as ui:
        csrf = csrf_of(ui.get("/ui/new-agent").text)
        bad = ui.post("/ui/new-agent", data=agent_form(csrf, name="bad name!", system_prompt="Hi.",
                                                        arguments="9lives: starts with a digit"))
        assert bad.status_code == 400
        assert re.search(r'id="name"[^>]*aria-invalid="true" aria-describedby="error-name"', bad.text)
        assert re.search(r'id="error-name"[^>]*>agent names must match', bad.text)
        assert 'id="error-arguments"' in bad.text and "9lives" in bad.text
        assert 'value="bad name!"' in bad.text  # what was typed is kept
        taken = ui.post("/ui/new-agent", data=agent_form(csrf, name="reviewer", system_prompt="Hi."))
        assert taken.status_code == 400 and "exists already" in taken.text and 'id="error-name"' in taken.text
        empty = ui.post("/ui/new-agent", data=agent_form(csrf, name="quiet"))
        assert empty.status_code == 400 and 'id="error-system_prompt"' in empty.text
        forged = ui.post("/ui/new-agent", data=agent_form(csrf, name="forged", system_prompt="Hi.",
                                                           use_skill=["no-such-skill"]))
        assert forged.status_code == 400 and 'id="error-skills"' in forged.text
        skill = ui.post("/ui/new-agent", data=agent_form(csrf, action="add_skill", new_skill_name="../escape"))
        assert skill.status_code == 400 and 'id="error-new_skill_name"' in skill.text
        assert ui.get("/ui/agents/reviewer/edit").status_code == 400  # a TOML agent: read-only here
        assert ui.get("/ui/agents/nobody/edit").status_code == 404
    assert agent_files(root) == before and sorted(p.name for p in (root / "skills").iterdir()) == ["checklist"]


def test_a_file_changed_on_disk_is_not_overwritten(zoo_config: Path, start_server):
    path = zoo_config.parent / "agents" / "debugger.md"
    server = start_server(config_mod.load_file(zoo_config))
    with client(server) as ui:
        page = ui.get("/ui/agents/debugger/edit")
        version = re.search(r'name="version" value="([0-9a-f]{64})"', page.text).group(1)
        assert 'id="name" name="name" value="debugger" required readonly' in page.text
        assert 'value="Read, Edit, Bash, Grep, Glob"' in page.text
        form = agent_form(csrf_of(page.text), name="debugger", description="Finds bugs.", tools="Read, Grep",
                          system_prompt="You find bugs.", version=version)
        changed = path.read_text(encoding="utf-8").replace("root cause analysis", "root causes, edited elsewhere")
        path.write_text(changed, encoding="utf-8")
        conflict = ui.post("/ui/agents/debugger/edit", data=form)
        assert conflict.status_code == 409 and 'id="conflict"' in conflict.text
        assert "edited elsewhere" in block(conflict.text, "conflict-disk")
        assert "You find bugs." in block(conflict.text, "conflict-yours")
        assert path.read_text(encoding="utf-8") == changed
        fresh = re.search(r'name="version" value="([0-9a-f]{64})"', conflict.text).group(1)
        again = ui.post("/ui/agents/debugger/edit", data=form | {"version": fresh})
        assert again.status_code == 303
        renamed = ui.post("/ui/agents/debugger/edit", data=form | {"name": "other", "version": fresh})
        assert renamed.status_code == 400 and "renaming" in renamed.text
    meta, body = split_front_matter(path.read_text(encoding="utf-8"))
    assert meta == {"name": "debugger", "description": "Finds bugs.", "tools": "Read, Grep", "model": "sonnet",
                    "color": "red"}  # keys the console does not edit are kept
    assert body.strip() == "You find bugs."


@pytest.mark.parametrize("refusal", ["read_only", "no_csrf"])
def test_read_only_mode_and_a_missing_csrf_token_refuse_the_post(zoo_config: Path, start_server, refusal):
    root = zoo_config.parent
    config = config_mod.load_file(zoo_config)
    if refusal == "read_only":
        config.ui = UiConfig(read_only=True)
    server = start_server(config)
    with client(server) as ui:
        page = ui.get("/ui/new-agent")
        csrf = csrf_of(page.text) if refusal == "read_only" else ""
        assert refusal != "read_only" or "read-only: saving is refused" in page.text
        for url, form in (("/ui/new-agent", agent_form(csrf, name="sneaky", system_prompt="Hi.")),
                          ("/ui/new-agent", agent_form(csrf, action="add_skill", new_skill_name="sneaky")),
                          ("/ui/agents/debugger/edit", agent_form(csrf, name="debugger", system_prompt="Hi."))):
            refused = ui.post(url, data=form)
            assert refused.status_code == 403
            assert ("read-only" if refusal == "read_only" else "CSRF") in refused.text
    assert not (root / "agents" / "sneaky.md").exists() and not (root / "skills" / "sneaky").exists()
    assert "root cause analysis" in (root / "agents" / "debugger.md").read_text(encoding="utf-8")


def test_html_in_an_agent_is_shown_as_text(zoo_config: Path, start_server):
    server = start_server(config_mod.load_file(zoo_config))
    with client(server) as ui:
        csrf = csrf_of(ui.get("/ui/new-agent").text)
        saved = ui.post("/ui/new-agent", data=agent_form(csrf, name="hostile", description=PAYLOAD,
                                                          system_prompt=f"Say {PAYLOAD}"))
        assert saved.status_code == 303
        for url in ("/ui/agents", "/ui/agents/hostile/edit", "/ui/agents/hostile?run=1"):
            page = ui.get(url)
            assert page.status_code == 200
            assert "<script>alert" not in page.text and "<img src=x" not in page.text
            assert "&lt;script&gt;alert(" in page.text
            assert re.findall(r"<script[^>]*>", page.text) == [
                '<script src="/ui/static/htmx.min.js" defer>', '<script src="/ui/static/console.js" defer>']
        js = ui.get("/ui/static/console.js")
        assert js.status_code == 200 and "javascript" in js.headers["content-type"] and "clipboard" in js.text


def test_without_a_skill_folder_the_page_says_so(tmp_path: Path, start_server):
    cfg = write_served(tmp_path)
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("[agents.reviewer]", "[agents]\nskill_paths = []\n\n"
                                                           "[agents.reviewer]"), encoding="utf-8")
    (tmp_path / "skills").rename(tmp_path / "unused-skills")
    text = cfg.read_text(encoding="utf-8").replace('skills = ["checklist"]\n', "")
    cfg.write_text(text, encoding="utf-8")
    server = start_server(config_mod.load_file(cfg))
    with client(server) as ui:
        page = ui.get("/ui/new-agent")
        assert 'id="new-skill"' not in page.text and 'id="no-skill-folder"' in page.text
        assert "[agents] skill_paths" in page.text
        refused = ui.post("/ui/new-agent", data=agent_form(csrf_of(page.text), action="add_skill",
                                                            new_skill_name="tester"))
        assert refused.status_code == 400 and "no skill folder is configured" in refused.text


def test_a_skill_category_is_a_string(tmp_path: Path):
    folder = tmp_path / "grouped"
    folder.mkdir()
    path = folder / "SKILL.md"
    path.write_text("---\ndescription: d\n---\nDo it.\n", encoding="utf-8")
    assert load_skill(path).category == ""
    path.write_text("---\ncategory: [a, b]\n---\nDo it.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="category must be a string"):
        load_skill(path)


def test_an_agent_file_that_did_not_load_says_why_instead_of_an_editor(zoo_config: Path, start_server):
    (zoo_config.parent / "agents" / "broken.md").write_text("---\nname: broken\nskills: [nope]\n---\nHi.\n",
                                                             encoding="utf-8")
    server = start_server(config_mod.load_file(zoo_config))
    with client(server) as ui:
        page = ui.get("/ui/agents/broken/edit")
        assert page.status_code == 400 and "did not load" in page.text and "unknown skill" in page.text
        assert 'id="agent-form"' not in page.text
        debugger = zoo_config.parent / "agents" / "debugger.md"  # loaded, then broken on disk
        debugger.write_text("---\nname: debugger\ntools: 42\n---\nHi.\n", encoding="utf-8")
        page = ui.get("/ui/agents/debugger/edit")
        assert page.status_code == 400 and "agents/debugger.md does not load" in page.text and "tools" in page.text
        debugger.write_text("---\nname: [unclosed\n---\nHi.\n", encoding="utf-8")
        page = ui.get("/ui/agents/debugger/edit")
        assert page.status_code == 400 and "not valid YAML" in page.text


def test_an_agent_named_new_has_its_own_page(zoo_config: Path, start_server):
    """The editor for a new agent lives at ``/ui/new-agent``: no agent name can take its place, and an
    agent named ``new`` is tried and edited at its own address like any other."""
    (zoo_config.parent / "agents" / "new.md").write_text(
        "---\nname: new\ndescription: Greets newcomers.\n---\nWelcome the newcomer.\n", encoding="utf-8")
    server = start_server(config_mod.load_file(zoo_config))
    with client(server) as ui:
        tried = ui.get("/ui/agents/new")
        assert tried.status_code == 200 and "Greets newcomers." in tried.text
        assert 'id="agent-form"' not in tried.text
        edit = ui.get("/ui/agents/new/edit")
        assert edit.status_code == 200 and 'id="agent-form"' in edit.text and 'value="new"' in edit.text
        blank = ui.get("/ui/new-agent")
        assert blank.status_code == 200 and 'id="agent-form"' in blank.text and 'value="new"' not in blank.text
