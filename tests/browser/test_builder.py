"""The agent builder in headless Chromium against the real ``ctx serve --http``: the server's tools as
toggles, an unknown tool refused with the list of known ones (while Claude Code's own are kept),
argument rows added and removed, the live preview following the sample values without a reload, and
"Try it" showing what a client receives — which a real MCP client then gets once the agent is saved."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx2
from browser.console import TOKEN, WAIT_MS, Console, Events
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

SERVE = {"embedding": "disabled"}
PROMPT = "Take the ferry to {{island}} at {{hour}}."


def offered_tools(url: str) -> list[str]:
    with httpx2.Client(base_url=url, headers={"authorization": f"Bearer {TOKEN}"}, timeout=15) as http:
        return [t["name"] for t in http.get("/tools/list").json()["tools"]]


async def mcp_answers(url: str, arguments: dict[str, str]) -> dict[str, str]:
    """``prompts/get`` and ``agent_inject`` (compiled, structured) for the saved agent ``ferry``."""
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"}, timeout=15) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client:
            got = await client.get_prompt("ferry", arguments)
            answers = {"preview-prompt": "\n\n".join(m.content.text for m in got.messages)}
            for fmt in ("compiled", "structured"):
                result = await client.call_tool("agent_inject", {"name": "ferry", "format": fmt, "arguments": arguments})
                answers[f"try-{fmt}"] = result.content[0].text
            return answers


def over_mcp(url: str, arguments: dict[str, str]) -> dict[str, str]:
    """``mcp_answers`` on a thread of its own: Playwright's sync API holds this thread's event loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, mcp_answers, url, arguments).result(timeout=15)


def wait_text(page: Any, selector: str, text: str) -> None:
    """Wait until the element ``selector`` exists and its text holds ``text``."""
    page.wait_for_function("([s, t]) => { const e = document.querySelector(s); return !!e && e.textContent.includes(t); }",
                           arg=[selector, text], timeout=WAIT_MS)


def test_tools_rows_preview_and_try_it(page: Any, console: Console, events: Events, shoot) -> None:
    page.goto(f"{console.url}/ui/new-agent")
    wait_text(page, "#preview", "Nothing to preview until these are fixed")
    toggles = page.eval_on_selector_all("input[type=checkbox][name=tool]", "boxes => boxes.map(b => b.value)")
    assert toggles == offered_tools(console.url) and "search" in toggles
    page.evaluate("() => { window.notReloaded = true; }")

    page.fill("#name", "ferry")
    page.fill("#description", "Books the ferry.")
    page.fill("#system_prompt", PROMPT)
    page.check("#tool-search")
    page.fill("#arg-0-name", "island")
    page.check("#arg-0-required")
    page.fill("#arg-0-sample", "Gull Rock")
    add = page.locator("#add-argument")
    assert add.is_visible(), "the Add button stays hidden: builder.js did not run"
    add.click()
    assert page.evaluate("() => document.activeElement.id") == "arg-1-name"
    page.fill("#arg-1-name", "hour")
    page.fill("#arg-1-enum", "dawn, noon")
    page.fill("#arg-1-default", "noon")
    wait_text(page, "#preview-prompt", "Take the ferry to Gull Rock at noon.")
    page.fill("#arg-0-sample", "Seal Island")  # the preview follows the sample values
    wait_text(page, "#preview-prompt", "Take the ferry to Seal Island at noon.")
    page.fill("#arg-1-sample", "dawn")
    wait_text(page, "#preview-prompt", "Take the ferry to Seal Island at dawn.")

    add.click()  # a third row, then taken out again
    page.fill("#arg-2-name", "spare")
    page.fill("#arg-2-sample", "oars")
    wait_text(page, "#preview-with", "spare = “oars”")
    page.locator("fieldset.argument[data-row='2'] button.remove-argument").click()
    assert page.locator("#arg-2-name").count() == 0
    page.wait_for_function("() => !document.querySelector('#preview-with').textContent.includes('spare')",
                           timeout=WAIT_MS)

    page.fill("#arg-1-name", "9hour")  # argument errors in words, never a regular expression
    wait_text(page, "#preview-errors", "an argument name starts with a letter or _")
    assert "^[" not in page.inner_text("#preview")
    page.fill("#arg-1-name", "hour")
    wait_text(page, "#preview-prompt", "Take the ferry to Seal Island at dawn.")
    shoot(page, "agent-builder", full_page=True)

    page.click("#try-button")
    page.locator("#try-compiled").wait_for()
    shown = {i: page.locator(f"#{i}").text_content() or "" for i in ("preview-prompt", "try-compiled", "try-structured")}
    assert "Take the ferry to Seal Island at dawn." in shown["try-compiled"]
    assert page.locator("#try-messages li").count() == 1
    assert page.evaluate("() => window.notReloaded === true"), "the preview reloaded the page"
    shoot(page, "agent-builder-try", full_page=True)

    page.click("button#save")
    page.wait_for_url(f"{console.url}/ui/agents/ferry/edit?saved=1")
    assert page.input_value("#arg-1-enum") == "dawn, noon" and page.input_value("#arg-1-default") == "noon"
    assert page.is_checked("#tool-search") and not page.is_checked("#tool-get")
    assert over_mcp(console.url, {"island": "Seal Island", "hour": "dawn"}) == shown
    assert events.dialogs == [] and events.errors == []


def test_an_unknown_tool_is_refused_with_the_known_ones(page: Any, console: Console, events: Events) -> None:
    agent_file = console.root / "agents" / "ghost.md"
    page.goto(f"{console.url}/ui/new-agent")
    assert "Read" in page.inner_text("#tools-hint"), "the page says Claude Code's own tools are kept"
    page.fill("#name", "ghost")
    page.fill("#system_prompt", "You haunt the harbour.")
    page.fill("#tools", "not_a_real_tool")
    wait_text(page, "#preview-errors", "unknown tool 'not_a_real_tool'")
    page.click("button#save")
    error = page.locator("#error-tools")
    error.wait_for()
    message = error.inner_text()
    assert message.startswith("unknown tool 'not_a_real_tool': this server's tools are ")
    assert all(re.search(rf"\b{name}\b", message) for name in offered_tools(console.url))
    assert page.get_attribute("#tools", "aria-invalid") == "true"
    assert not agent_file.exists(), "an agent with an unknown tool was saved"

    page.fill("#tools", "Read, Grep")  # Claude Code's own tools: kept as written
    page.click("button#save")
    page.wait_for_url(f"{console.url}/ui/agents/ghost/edit?saved=1")
    assert "tools: Read, Grep" in agent_file.read_text(encoding="utf-8")
    assert page.input_value("#tools") == "Read, Grep"
    refused = f"Failed to load resource: the server responded with a status of 400 (Bad Request) at {console.url}/ui/new-agent"
    assert events.dialogs == [] and events.errors == [refused], "only the refused save's own 400"
