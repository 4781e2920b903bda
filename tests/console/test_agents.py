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


def agent_form(csrf: str, args: list[dict] | None = None, **fields) -> dict:
    """The builder's fields; ``args``: argument rows (name, description, required, enum, default, sample)."""
    base = {"csrf": csrf, "name": "", "description": "", "system_prompt": "", "tools": "",
            "version": "", "new_skill_name": "", "new_skill_category": "", "new_skill_description": "",
            "new_skill_instructions": "", "action": "save"}
    rows = {f"arg-{n}-{key}": ("1" if value is True else value) for n, row in enumerate(args or [])
            for key, value in row.items() if value is not False}
    return base | rows | fields


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
        typed = {"name": "helper", "description": "Helps with one topic.", "tool": ["search", "get"],
                 "system_prompt": "You help with {{topic}}.\nBe brief.",
                 "args": [{"name": "topic", "description": "What to help with", "required": True}]}
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
                                                        args=[{"name": "9lives", "description": "a digit first"}]))
        assert bad.status_code == 400
        assert re.search(r'id="name"[^>]*aria-invalid="true" aria-describedby="error-name"', bad.text)
        assert re.search(r'id="error-name"[^>]*>an agent name is 1-64 letters, digits', bad.text)
        assert 'id="error-arguments"' in bad.text
        assert re.search(r'id="error-arg-0"[^>]*>&#39;9lives&#39;: an argument name starts with a letter or _', bad.text)
        assert "^[" not in bad.text and "{0,63}" not in bad.text  # in words, never a regular expression
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
            builder = ['<script src="/ui/static/builder.js" defer>'] if url.endswith("/edit") else []
            assert re.findall(r"<script[^>]*>", page.text) == [
                '<script src="/ui/static/htmx.min.js" defer>', '<script src="/ui/static/console.js" defer>', *builder]
        shown = ui.post("/ui/agent-preview", data=agent_form(csrf, name="hostile2", description=PAYLOAD,
                                                              system_prompt=f"Say {PAYLOAD} {{{{x}}}}", action="try",
                                                              args=[{"name": "x", "sample": PAYLOAD}]))
        assert shown.status_code == 200 and "<script" not in shown.text and "<img src=x" not in shown.text
        assert shown.text.count("&lt;script&gt;alert(") >= 3
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


def tool_names(ui) -> list[str]:
    """The tools the server offers, as ``/tools/list`` lists them (the API the console sits beside)."""
    return [t["name"] for t in ui.get("/tools/list").json()["tools"]]


def test_tools_are_toggles_of_the_servers_tools_and_an_unknown_one_is_refused(zoo_config: Path, start_server):
    root = zoo_config.parent
    server = start_server(config_mod.load_file(zoo_config))
    with client(server) as ui:
        page = ui.get("/ui/new-agent")
        offered = tool_names(ui)
        assert "search" in offered and "agent_zoo_inject" in offered
        toggles = re.findall(r'<input type="checkbox" id="tool-([^"]+)" name="tool" value="\1"', page.text)
        assert toggles == offered, "one toggle per tool the server offers, in its order"
        csrf = csrf_of(page.text)
        refused = ui.post("/ui/new-agent", data=agent_form(csrf, name="ghost", system_prompt="Hi.",
                                                            tool=["search"], tools="not_a_real_tool"))
        assert refused.status_code == 400
        message = html.unescape(re.search(r'id="error-tools"[^>]*>([^<]*)<', refused.text).group(1))
        assert message.startswith("unknown tool 'not_a_real_tool': this server's tools are ")
        assert all(name in message for name in offered)
        assert re.search(r'id="tool-search"[^>]*checked', refused.text), "the ticked tools stay ticked"
        assert not (root / "agents" / "ghost.md").exists()
        kept = ui.post("/ui/new-agent", data=agent_form(csrf, name="coder", system_prompt="Hi.", tool=["search"],
                                                         tools="Read, Grep, mcp__github__create_issue"))
        assert kept.status_code == 303, "Claude Code's own tools are kept as written"
        edit = ui.get("/ui/agents/coder/edit").text
        assert re.search(r'id="tool-search"[^>]*checked', edit) and not re.search(r'id="tool-get"[^>]*checked', edit)
        assert 'id="tools" name="tools" value="Read, Grep, mcp__github__create_issue"' in edit
    meta, _ = split_front_matter((root / "agents" / "coder.md").read_text(encoding="utf-8"))
    assert meta["tools"] == "search, Read, Grep, mcp__github__create_issue"


@pytest.mark.anyio
async def test_the_core_refuses_an_agent_file_naming_an_unknown_tool(served):
    """The same check in the core call the console saves through, so no rim can skip it; a file in a
    ``.claude`` folder (Claude Code's own agents) keeps any name."""
    from context_harness.errors import BadRequest

    folder = served.agent_folder()
    text = "---\nname: ghost\ntools: search, not_a_real_tool\n---\nHi.\n"
    with pytest.raises(BadRequest, match=r"unknown tool 'not_a_real_tool': this server's tools are .*\bsearch\b"):
        await served.write_agent_file(folder / "ghost.md", text, None)
    assert not (folder / "ghost.md").exists()
    claude = served.config.base_dir / ".claude" / "agents" / "ghost.md"
    assert await served.write_agent_file(claude, text, None) is None
    assert claude.read_text(encoding="utf-8") == text
    assert await served.write_agent_file(folder / "reader.md", text.replace("not_a_real_tool", "Read"), None) is None


def test_arguments_are_rows_with_values_and_defaults_checked_in_words(zoo_config: Path, start_server):
    root = zoo_config.parent
    server = start_server(config_mod.load_file(zoo_config))
    with client(server) as ui:
        csrf = csrf_of(ui.get("/ui/new-agent").text)
        rows = [{"name": "tone", "description": "How to sound", "enum": "calm, brisk", "default": "loud"},
                {"name": "tone", "description": "again"},
                {"name": "", "description": "no name"},
                {"name": "ok.name-1", "required": True}]
        bad = ui.post("/ui/new-agent", data=agent_form(csrf, name="toned", system_prompt="Be {{tone}}.", args=rows))
        assert bad.status_code == 400
        errors = {n: html.unescape(m) for n, m in re.findall(r'id="error-arg-(\d+)"[^>]*>([^<]*)<', bad.text)}
        assert errors == {"0": "the default 'loud' is not one of the allowed values (calm, brisk)",
                          "1": "'tone' is declared twice: give each argument its own name",
                          "2": "give the argument a name (or clear the row to drop it)"}
        assert "3 arguments to fix: see the marked rows" in bad.text
        assert 'id="arg-3-name" name="arg-3-name" value="ok.name-1"' in bad.text, "what was typed is kept"
        assert 'id="arg-4-name" name="arg-4-name" value=""' in bad.text, "and a blank row to add one more"
        rows[0]["default"], rows[1]["name"] = "calm", ""
        rows[1]["description"] = rows[2]["description"] = ""  # cleared rows are dropped
        saved = ui.post("/ui/new-agent", data=agent_form(csrf, name="toned", system_prompt="Be {{tone}}.", args=rows))
        assert saved.status_code == 303, saved.text
        edit = ui.get("/ui/agents/toned/edit").text
        assert 'id="arg-0-enum" name="arg-0-enum" value="calm, brisk"' in edit
        assert 'id="arg-0-default" name="arg-0-default" value="calm"' in edit
        assert re.search(r'id="arg-1-required"[^>]*checked', edit) and 'value="ok.name-1"' in edit
    meta, _ = split_front_matter((root / "agents" / "toned.md").read_text(encoding="utf-8"))
    assert meta["arguments"] == [
        {"name": "tone", "description": "How to sound", "required": False, "enum": ["calm", "brisk"], "default": "calm"},
        {"name": "ok.name-1", "description": "", "required": True}]


def preview_block(fragment: str, element_id: str) -> str:
    match = re.search(rf'<pre class="body" id="{element_id}">(.*?)</pre>', fragment, re.S)
    assert match, f"no #{element_id} in the preview: {fragment[:400]}"
    return html.unescape(match.group(1))


@pytest.mark.anyio
async def test_the_preview_resolves_the_unsaved_agent_as_mcp_clients_get_it_once_saved(zoo_config: Path,
                                                                                        start_server):
    root = zoo_config.parent
    server = start_server(config_mod.load_file(zoo_config))
    form = {"name": "pilot", "description": "Guides boats.", "system_prompt": "Guide the boat to {{berth}} at {{hour}}.",
            "tool": ["search", "get"], "use_skill": ["checklist"], "enable_skill": ["checklist"],
            "args": [{"name": "berth", "required": True, "sample": "the east quay"},
                     {"name": "hour", "enum": "dawn, noon", "default": "noon"}]}
    with client(server) as ui:
        csrf = csrf_of(ui.get("/ui/new-agent").text)
        shown = ui.post("/ui/agent-preview", data=agent_form(csrf, **form, action="preview"))
        assert shown.status_code == 200 and "<html" not in shown.text
        prompt = preview_block(shown.text, "preview-prompt")
        assert "Guide the boat to the east quay at noon." in prompt and "Check the tests." in prompt
        assert "With berth = “the east quay”." in html.unescape(shown.text)
        assert 'id="try-compiled"' not in shown.text
        missing = ui.post("/ui/agent-preview", data=agent_form(csrf, **(form | {"args": [{"name": "berth", "required": True}]}),
                                                                 action="preview"))
        assert "missing required argument &#39;berth&#39;" in missing.text
        wrong = ui.post("/ui/agent-preview", data=agent_form(csrf, **form, tools="not_a_real_tool", action="preview"))
        assert 'id="preview-errors"' in wrong.text and "unknown tool" in wrong.text
        tried = ui.post("/ui/agent-preview", data=agent_form(csrf, **form, action="try"))
        answers = {i: preview_block(tried.text, i) for i in ("preview-prompt", "try-compiled", "try-structured")}
        assert "0 searches and 0 fetches" in tried.text
        page = ui.post("/ui/new-agent", data=agent_form(csrf, **form, action="try"))  # without JavaScript
        assert page.status_code == 200 and preview_block(page.text, "try-compiled") == answers["try-compiled"]
        assert not (root / "agents" / "pilot.md").exists(), "a preview writes nothing"
        assert ui.post("/ui/agent-preview", data=agent_form("", **form)).status_code == 403
        saved = ui.post("/ui/new-agent", data=agent_form(csrf, **form))
        assert saved.status_code == 303
    async with Client(f"{server.url}/mcp", mode="legacy") as mcp:
        got = await mcp.get_prompt("pilot", {"berth": "the east quay"})
        assert [m.content.text for m in got.messages] == [answers["preview-prompt"]]
        for fmt in ("compiled", "structured"):
            result = await mcp.call_tool("agent_inject", {"name": "pilot", "format": fmt,
                                                          "arguments": {"berth": "the east quay"}})
            assert result.content[0].text == answers[f"try-{fmt}"]


def test_a_read_only_console_previews_but_does_not_save(zoo_config: Path, start_server):
    config = config_mod.load_file(zoo_config)
    config.ui = UiConfig(read_only=True)
    server = start_server(config)
    with client(server) as ui:
        csrf = csrf_of(ui.get("/ui/new-agent").text)
        form = agent_form(csrf, name="quiet", system_prompt="Stay quiet.")
        assert "Stay quiet." in ui.post("/ui/agent-preview", data=form | {"action": "preview"}).text
        assert "Stay quiet." in ui.post("/ui/new-agent", data=form | {"action": "preview"}).text
        assert ui.post("/ui/new-agent", data=form).status_code == 403
    assert not (zoo_config.parent / "agents" / "quiet.md").exists()


@pytest.mark.anyio
async def test_try_it_of_a_lua_agent_shows_the_context_it_fetched_and_the_messages_a_client_gets(
        zoo_config: Path, start_server):
    """The Lua responder pre-searches the runbooks (two searches, one fetch) and returns a message of
    its own: the page counts them and lists each message as ``prompts/get`` sends it."""
    server = start_server(config_mod.load_file(zoo_config))
    with client(server) as ui:
        page = ui.get("/ui/agents/responder", params={"run": "1", "service": "search"}).text
    assert re.search(r'id="resolved-cost">Resolved in [\d.]+ ms, with 2 searches and 1 fetch of the knowledge base',
                     page)
    shown = [html.unescape(m) for m in re.findall(r'<li><strong>\w+</strong><pre class="body">(.*?)</pre></li>',
                                                  page, re.S)]
    async with Client(f"{server.url}/mcp", mode="legacy") as mcp:
        got = await mcp.get_prompt("responder", {"service": "search"})
    assert shown == [m.content.text for m in got.messages] and len(shown) == 2
    assert shown[1].startswith("Found ") and "Runbook: Runbook: search down" in shown[0]


TONER = """---
name: toner
description: Sounds a way.
arguments:
  - name: tone
    description: How to sound
    enum: [calm, brisk]
    default: calm
  - name: mood
    required: true
    enum: [glad, grim]
  - name: topic
---
Be {{tone}} and {{mood}} about {{topic}}.
"""


def test_try_it_offers_an_argument_with_allowed_values_as_a_select(zoo_config: Path, start_server):
    (zoo_config.parent / "agents" / "toner.md").write_text(TONER, encoding="utf-8")
    server = start_server(config_mod.load_file(zoo_config))
    with client(server) as ui:
        page = ui.get("/ui/agents/toner").text
        tone = re.search(r'<select id="(arg-\d)" name="tone">(.*?)</select>', page, re.S)
        assert tone, page
        assert re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', tone.group(2)) == [
            ("", "not given (the default: calm)"), ("calm", "calm"), ("brisk", "brisk")]
        assert f'<label for="{tone.group(1)}">tone — How to sound' in page
        mood = re.search(r'<select id="arg-\d" name="mood" required>(.*?)</select>', page, re.S)
        assert mood and re.findall(r'<option value="([^"]*)"', mood.group(1)) == ["", "glad", "grim"]
        assert re.search(r'<input id="arg-\d" name="topic" value="">', page), "no allowed values: a text box"
        resolved = ui.get("/ui/agents/toner", params={"run": "1", "mood": "grim", "tone": "brisk", "topic": "tides"}).text
        assert "Be brisk and grim about tides." in html.unescape(resolved)
        assert re.search(r'<option value="brisk" selected>brisk</option>', resolved)
        assert re.search(r'<option value="grim" selected>grim</option>', resolved)
        odd = ui.get("/ui/agents/toner", params={"run": "1", "mood": "<b>x</b>"}).text
        assert '<option value="&lt;b&gt;x&lt;/b&gt;" selected>&lt;b&gt;x&lt;/b&gt; (not allowed)</option>' in odd
        assert 'role="alert"' in odd
