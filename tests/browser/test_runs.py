"""An agent run from the console in headless Chromium, against the real ``ctx serve --http`` and the
scripted chat server: the Runs form starts it, the run's page (following the run with htmx under the
console's CSP) shows the write waiting, Allow writes the note, and the page shows the run finished with
its answer; no dialog and no console error on the way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser.console import Console, serve_console

from support.agent_runs import NOTE, PERMIT
from support.chat_server import ScriptedChat, delay, message, tool_calls
from support.http import stop_process

TASK = "File the meeting notes about the shed permit"
ANSWER = "Filed it under projects/meeting.md."


@pytest.fixture(scope="module")
def chat() -> Iterator[ScriptedChat]:
    """The first answer comes late, so the run's page shows the write only by following the run."""
    with ScriptedChat([delay(4, tool_calls([("search", {"query": "shed permit"})])),
                       tool_calls([("note_write", NOTE)]), message(ANSWER)], model="local") as server:
        yield server


@pytest.fixture(scope="module")
def console(chat: ScriptedChat, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """The served console with a writable folder ``notes``, ``[models.local]`` at ``chat`` and the agent ``filer``."""
    extra = (f'[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n\n'
             f'[models.local]\nurl = "{chat.url}"\nmodel = "local"\n\n'
             '[agents.filer]\ndescription = "Files notes"\ntools = ["search", "get", "note_write"]\n'
             'system_prompt = "You file notes."\n')
    served = serve_console(tmp_path_factory.mktemp("runs"), extra=extra, embedding="disabled",
                           files={"notes/permit.md": PERMIT})
    yield served
    stop_process(served.process)


def test_a_run_started_and_approved_in_the_browser(page: Any, console: Console, events: Any, shoot: Any) -> None:
    page.goto(f"{console.url}/ui/runs")
    page.select_option("#run-agent", "filer")
    page.fill("#run-task", TASK)
    page.click("#start-run button")
    page.wait_for_url(f"{console.url}/ui/runs/r*")
    assert page.locator("#approval").count() == 0, "the model has not answered yet"
    approval = page.locator("#approval")
    approval.wait_for()  # the page polls the run until the write waits
    assert "note_write writes and waits for your approval" in approval.inner_text()
    assert "projects/meeting.md" in page.locator("#approval pre").inner_text()
    shoot(page, "run-approval", full_page=True)
    assert not (console.root / "notes" / "projects").exists()

    page.click("#approval button[value=yes]")
    page.locator("#run-steps [role=status]", has_text="finished: the model gave its answer").wait_for()
    assert page.locator(".answer").inner_text() == ANSWER
    assert "note_write: approved by a person" in page.locator("#run-steps").inner_text()
    assert NOTE["content"] in (console.root / "notes" / "projects" / "meeting.md").read_text(encoding="utf-8")
    shoot(page, "run", full_page=True)
    page.set_viewport_size({"width": 375, "height": 800})  # a tool's output is one long line of JSON
    boxes = page.evaluate("() => [...document.querySelectorAll('#run-steps pre')].map(p => [p.scrollWidth, p.clientWidth])")
    assert len(boxes) >= 2 and all(scroll <= client + 1 for scroll, client in boxes), boxes
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), "the page scrolls sideways"
    started = page.locator("#run-steps dd time").first
    assert started.get_attribute("datetime") == started.inner_text()
    assert page.evaluate("() => [...document.querySelectorAll('time')].every(t => t.getClientRects().length === 1)")
    page.set_viewport_size({"width": 1280, "height": 800})

    page.goto(f"{console.url}/ui/runs")
    row = page.locator("table tbody tr").first
    assert "finished" in row.inner_text() and "filer" in row.inner_text()
    assert events.dialogs == [] and events.errors == []
