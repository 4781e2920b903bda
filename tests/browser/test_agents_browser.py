"""Building an agent in the console, in headless Chromium against the real ``ctx serve --http``: a new
agent with two skills (one written on the spot from the new-skill fieldset), one switched off, saved,
resolved in "Try it" and copied; then a real MCP client over the server's ``/mcp`` gets the very text
the console showed, through ``prompts/get`` and ``agent_zoo_inject``."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx2
from browser.console import TOKEN, Console
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

SERVE = {"server": 'compat = ["agentzoo"]', "embedding": "disabled"}
BERTH = "the east quay"


async def mcp_answers(url: str) -> dict[str, str]:
    """What an MCP client gets for the agent built below: ``prompts/get`` (messages joined as the
    console joins them) and ``agent_zoo_inject`` compiled and structured."""
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=15) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client:
            assert "pilot" in [p.name for p in (await client.list_prompts()).prompts]
            got = await client.get_prompt("pilot", {"berth": BERTH})
            answers = {"prompt-get": "\n\n".join(m.content.text for m in got.messages)}
            for fmt in ("compiled", "structured"):
                result = await client.call_tool("agent_zoo_inject", {"agentId": "pilot", "format": fmt,
                                                                      "arguments": {"berth": BERTH}})
                answers[f"inject-{fmt}"] = result.content[0].text
            return answers


def over_mcp(url: str) -> dict[str, str]:
    """``mcp_answers`` on a thread of its own: Playwright's sync API holds this thread's event loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, mcp_answers, url).result(timeout=15)


def fill_agent(page: Any) -> None:
    page.fill("#name", "pilot")
    page.fill("#description", "Guides boats to their berth.")
    page.fill("#system_prompt", "You guide boats into {{berth}}.\nMind the tide.")
    page.check("#tool-search")
    page.check("#tool-get")
    page.fill("#arg-0-name", "berth")
    page.fill("#arg-0-description", "Where the boat moors")
    page.check("#arg-0-required")


def test_an_agent_built_in_the_browser_is_what_mcp_clients_get(page: Any, console: Console, shoot) -> None:
    page.goto(f"{console.url}/ui/agents")
    page.click("a#new-agent")
    page.wait_for_url(f"{console.url}/ui/new-agent")
    fill_agent(page)
    page.check("#use-checklist")
    page.check("#enable-checklist")
    page.fill("#new_skill_name", "knots")
    page.fill("#new_skill_category", "Seamanship")
    page.fill("#new_skill_description", "Which knot for which line.")
    page.fill("#new_skill_instructions", "Tie a bowline for the bow line.")
    page.click("button#add-skill")
    page.locator("#skill-added").wait_for()
    assert (console.root / "skills" / "knots" / "SKILL.md").is_file()
    assert page.input_value("#name") == "pilot", "what was typed is kept when a skill is added"
    assert page.input_value("#system_prompt") == "You guide boats into {{berth}}.\nMind the tide."
    knots = page.locator("div.skill[data-skill=knots]")
    assert knots.locator("#use-knots").is_checked() and knots.locator("#enable-knots").is_checked()
    assert page.locator("h3.skill-category", has_text="Seamanship").count() == 1
    assert page.is_checked("#use-checklist") and page.is_checked("#enable-checklist")
    page.uncheck("#enable-checklist")  # used but switched off
    shoot(page, "agent-editor", full_page=True)
    page.click("button#save")
    page.wait_for_url(f"{console.url}/ui/agents/pilot/edit?saved=1")
    assert "agents/pilot.md" in page.locator("#saved").inner_text()
    assert page.is_checked("#use-checklist") and not page.is_checked("#enable-checklist")
    saved = (console.root / "agents" / "pilot.md").read_text(encoding="utf-8")
    assert "disabled_skills" in saved and "checklist" in saved and "knots" in saved

    page.goto(f"{console.url}/ui/agents")
    row = page.locator("tr", has_text="pilot")
    assert row.locator("a.edit-agent").get_attribute("href") == "/ui/agents/pilot/edit"
    row.locator("th a").click()
    page.wait_for_url(f"{console.url}/ui/agents/pilot")
    page.get_by_label(re.compile(r"^berth")).fill(BERTH)
    page.get_by_role("button", name="Resolve the prompt").click()
    shown_get = page.locator("pre#prompt-get")
    shown_get.wait_for()
    prompt = shown_get.text_content() or ""
    assert f"You guide boats into {BERTH}." in prompt and "Tie a bowline for the bow line." in prompt
    assert "Run the checklist" not in prompt, "a switched-off skill still reaches the prompt"
    shown = {block: page.locator(f"pre#{block}").text_content() or ""
             for block in ("prompt-get", "inject-compiled", "inject-structured")}
    assert [s["name"] for s in json.loads(shown["inject-structured"])["skills"]] == ["knots"]
    shoot(page, "agent-try")

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    copy = page.locator("button.copy[data-target=prompt-get]")
    assert copy.is_visible(), "the copy buttons stay hidden: console.js did not run"
    copy.click()
    page.locator("#copy-status", has_text="Copied prompt-get").wait_for()
    assert page.evaluate("() => navigator.clipboard.readText()") == shown["prompt-get"]

    assert over_mcp(console.url) == shown


def test_a_bad_field_is_marked_and_a_file_changed_on_disk_is_not_overwritten(page: Any, console: Console) -> None:
    agent_file = console.root / "agents" / "harbourmaster.md"
    page.goto(f"{console.url}/ui/agents")
    toml_row = page.locator("tr", has_text="tide-reader")
    assert "(read-only here)" in toml_row.inner_text() and toml_row.locator("a.edit-agent").count() == 0
    page.locator("tr", has_text="harbourmaster").locator("a.edit-agent").click()
    page.wait_for_url(f"{console.url}/ui/agents/harbourmaster/edit")
    assert page.input_value("#system_prompt").strip() == "You answer questions about the harbour from its manual."
    page.fill("#system_prompt", "")
    page.click("button#save")
    page.locator("#error-system_prompt").wait_for()
    assert page.get_attribute("#system_prompt", "aria-invalid") == "true"
    assert page.get_attribute("#system_prompt", "aria-describedby") == "error-system_prompt"
    assert "from its manual" in agent_file.read_text(encoding="utf-8"), "a refused save wrote the file"

    page.fill("#system_prompt", "You answer from the browser.")
    agent_file.write_text(agent_file.read_text(encoding="utf-8").replace("from its manual", "from the harbour log"),
                          encoding="utf-8")
    page.click("button#save")
    conflict = page.locator("#conflict")
    conflict.wait_for()
    assert "from the harbour log" in conflict.inner_text() and "You answer from the browser." in conflict.inner_text()
    assert "from the harbour log" in agent_file.read_text(encoding="utf-8"), "the change on disk was overwritten"
