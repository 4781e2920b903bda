"""The console's agent runs (``/ui/runs``) through the real HTTP app under uvicorn, against the scripted chat
server: a logged-in session starts a run with its CSRF token, the run's page shows the write waiting for
approval, Allow writes the note (Refuse does not) and the page shows the run finished with its answer;
what cannot start says why in the form; a read-only console refuses to start runs or answer approvals.
The server is ``ctx serve --http`` in a subprocess: a run started from the page goes on in the
background of a serving knowledge base."""

from __future__ import annotations

import html
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.agent_runs import NOTE, run_workspace
from support.chat_server import ScriptedChat, message, tool_calls
from support.console import client, csrf_of
from support.http import free_port, spawn_http, stop_process

TOKEN = "tok-runs-5e1d-never-shown"
TASK = "File the meeting notes"
LIMIT = 20.0  # seconds a page may take to show a step the scripted server answers at once


@pytest.fixture
def chat() -> Any:
    with ScriptedChat([tool_calls([("note_write", NOTE)]), message("Filed it under projects/meeting.md.")],
                      model="local") as server:
        yield server


@dataclass
class Served:
    url: str


@pytest.fixture
def serve(tmp_path: Path, child_env: dict[str, str]) -> Iterator[Callable[..., Served]]:
    """``serve(url, read_only=False)``: ``ctx serve --http`` (a serving knowledge base: its runs go on in
    the background) over ``run_workspace`` with the token ``TOKEN``; stopped at teardown."""
    started: list[subprocess.Popen[bytes]] = []

    def start(url: str, read_only: bool = False, extra: str = "") -> Served:
        config = run_workspace(tmp_path, url, extra=("[ui]\nread_only = true\n" if read_only else "") + extra)
        text = config.read_text(encoding="utf-8")
        config.write_text(text.replace("sync_on_start = false\n", f'sync_on_start = false\nauth_token = "{TOKEN}"\n'),
                          encoding="utf-8")
        port = free_port()
        with (tmp_path / "serve.log").open("ab") as log:
            started.append(spawn_http(["--config", str(config)], child_env, port, stderr=log))
        return Served(f"http://127.0.0.1:{port}")

    yield start
    for proc in started:
        stop_process(proc)


def logged_in(ui: Any) -> str:
    """Log the client in with the token; the session's CSRF token."""
    first = ui.get("/ui/runs")
    assert first.status_code == 303 and first.headers["location"].startswith("/ui/login?next=")
    login = ui.get(first.headers["location"])
    done = ui.post(first.headers["location"], data={"csrf": csrf_of(login.text), "token": TOKEN})
    assert done.status_code == 303, done.text
    page = ui.get("/ui/runs")
    assert page.status_code == 200
    return csrf_of(page.text)


def page_until(ui: Any, path: str, wanted: str) -> str:
    deadline = time.monotonic() + LIMIT
    while True:
        text = str(ui.get(path).text)
        if wanted in text:
            return text
        assert time.monotonic() < deadline, f"not within {LIMIT:g} s: {wanted!r} on {path}:\n{text}"
        time.sleep(0.1)


def call_of(page: str) -> dict[str, str]:
    """The call an approval form on ``page`` answers: its hidden ``call`` and ``digest`` fields."""
    found = {name: re.search(rf'name="{name}" value="([^"]+)"', page) for name in ("call", "digest")}
    assert all(found.values()), "no approval form on the page"
    return {name: match.group(1) for name, match in found.items() if match}


def start(ui: Any, csrf: str, **form: str) -> str:
    started = ui.post("/ui/runs", data={"csrf": csrf, "agent": "filer", "task": TASK, **form})
    assert started.status_code == 303, started.text
    location = str(started.headers["location"])
    assert location.startswith("/ui/runs/r")
    return location


def test_start_a_run_and_allow_its_write_in_the_page(tmp_path: Path, chat: ScriptedChat, serve: Any) -> None:
    server = serve(chat.url)
    with client(server) as ui:
        csrf = logged_in(ui)
        form = ui.get("/ui/runs").text
        assert '<option value="filer">filer</option>' in form and '<option value="local">local</option>' in form
        assert "No runs yet." in form
        assert ui.post("/ui/runs", data={"agent": "filer", "task": TASK}).status_code == 403, "no CSRF token"

        where = start(ui, csrf)
        page = page_until(ui, where, 'id="approval"')
        assert "<strong>note_write</strong> writes and waits for your approval" in page
        assert '&#34;path&#34;: &#34;projects/meeting.md&#34;' in page or '"path": "projects/meeting.md"' in \
            html.unescape(page)
        assert 'hx-get="' + where + '/steps" hx-trigger="every 2s"' in page, "the page follows the run"
        assert not (tmp_path / "notes" / "projects").exists(), "nothing written before the yes"

        assert ui.post(f"{where}/approve", data={"answer": "yes", **call_of(page)}).status_code == 403, "no CSRF token"
        answered = ui.post(f"{where}/approve", data={"csrf": csrf, "answer": "yes", **call_of(page)})
        assert answered.status_code == 303 and answered.headers["location"] == where
        steps = page_until(ui, f"{where}/steps", "finished: the model gave its answer")
        assert '<div class="answer">Filed it under projects/meeting.md.</div>' in steps
        assert "<code>note_write</code>: approved by a person" in steps
        assert "hx-trigger" not in steps, "a finished run is not polled"
        assert 'id="approval"' not in steps
        assert NOTE["content"] in (tmp_path / "notes" / "projects" / "meeting.md").read_text(encoding="utf-8")

        run_id = where.rsplit("/", 1)[1]
        listing = ui.get("/ui/runs").text
        assert f'<a href="/ui/runs/{run_id}">{run_id}</a>' in listing and "<td>finished</td>" in listing
        assert TOKEN not in listing and TOKEN not in steps
    with client(server) as stranger:  # no session: the runs (tasks, tools' results) are not shown
        for path in ("/ui/runs", where, f"{where}/steps"):
            refused = stranger.get(path)
            assert refused.status_code == 303 and refused.headers["location"].startswith("/ui/login?next="), path
        assert stranger.post(f"{where}/approve", data={"answer": "no"}).status_code == 401


def test_refuse_in_the_page(tmp_path: Path, chat: ScriptedChat, serve: Any) -> None:
    server = serve(chat.url)
    with client(server) as ui:
        csrf = logged_in(ui)
        where = start(ui, csrf)
        page = page_until(ui, where, 'id="approval"')
        ui.post(f"{where}/approve", data={"csrf": csrf, "answer": "no", **call_of(page)})
        steps = page_until(ui, f"{where}/steps", "finished: the model gave its answer")
        assert "<code>note_write</code>: not approved (a person said no)" in steps
        assert "<code>note_write</code> → refused" in steps
    assert not (tmp_path / "notes" / "projects").exists()
    assert chat.requests[1]["messages"][-1]["tool_call_id"] == "call_1"


def test_an_allow_answers_the_call_it_was_shown_once(tmp_path: Path, child_env: dict[str, str], serve: Any) -> None:
    """The issue's case: the same Allow posted again a second later approved the next call (a
    note_delete) that the person never saw. Now the form names its call: the replay, a form without
    the call, and one for another call approve nothing, and the second call waits for its own Allow."""
    (tmp_path / "notes" / "doomed.md").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "notes" / "doomed.md").write_text("# Doomed\n\nKeep me.\n", encoding="utf-8")
    delete = {"source": "filesystem:notes", "path": "doomed.md"}
    script = [tool_calls([("note_write", NOTE)]), tool_calls([("note_delete", delete)]), message("Done.")]
    with ScriptedChat(script, model="local") as chat:
        server = serve(chat.url, extra='[agents.cleaner]\ndescription = "Files and deletes"\n'
                                        'tools = ["note_write", "note_delete"]\nsystem_prompt = "You tidy."\n')
        with client(server) as ui:
            csrf = logged_in(ui)
            where = start(ui, csrf, agent="cleaner")
            first = page_until(ui, where, 'id="approval"')
            shown = call_of(first)
            allow = {"csrf": csrf, "answer": "yes", **shown}
            assert ui.post(f"{where}/approve", data=allow).status_code == 303
            second = page_until(ui, where, "<strong>note_delete</strong>")
            assert call_of(second)["call"] != shown["call"]

            replay = ui.post(f"{where}/approve", data=allow)
            assert replay.status_code == 409 and "nothing was approved" in replay.text
            bare = ui.post(f"{where}/approve", data={"csrf": csrf, "answer": "yes"})
            assert bare.status_code == 409
            forged = ui.post(f"{where}/approve", data={**allow, "call": call_of(second)["call"]})
            assert forged.status_code == 409, "the right call id with the digest of another call"
            time.sleep(1.0)
            assert (tmp_path / "notes" / "doomed.md").is_file(), "the replayed Allow deleted the note"
            assert 'id="approval"' in ui.get(where).text, "the delete still waits for its own answer"

            refuse = ui.post(f"{where}/approve", data={"csrf": csrf, "answer": "no", **call_of(second)})
            assert refuse.status_code == 303
            steps = page_until(ui, f"{where}/steps", "finished: the model gave its answer")
            assert "<code>note_delete</code>: not approved (a person said no)" in steps
            assert ui.post(f"{where}/approve", data={"csrf": csrf, "answer": "yes", **call_of(second)}).status_code == 409
    assert (tmp_path / "notes" / "doomed.md").is_file()
    assert (tmp_path / "notes" / "projects" / "meeting.md").is_file()


def test_approve_every_write_from_the_form(tmp_path: Path, chat: ScriptedChat, serve: Any) -> None:
    server = serve(chat.url)
    with client(server) as ui:
        where = start(ui, logged_in(ui), yes="on")
        steps = page_until(ui, f"{where}/steps", "finished: the model gave its answer")
        assert "<code>note_write</code>: approved by the run&#39;s start (--yes, or the console&#39;s approve-every-write box)" in steps
    assert (tmp_path / "notes" / "projects" / "meeting.md").is_file()


def test_what_cannot_start_says_why(tmp_path: Path, chat: ScriptedChat, serve: Any) -> None:
    server = serve(chat.url)
    with client(server) as ui:
        csrf = logged_in(ui)
        unknown = ui.post("/ui/runs", data={"csrf": csrf, "agent": "filer", "task": TASK, "model": "nosuch"})
        assert unknown.status_code == 400
        assert "the run names model &#39;nosuch&#39;, which is not configured" in unknown.text
        assert "File the meeting notes</textarea>" in unknown.text, "the form keeps what was typed"
        empty = ui.post("/ui/runs", data={"csrf": csrf, "agent": "filer", "task": "  "})
        assert empty.status_code == 400 and "the task is empty" in empty.text
        missing = ui.get("/ui/runs/r1999")
        assert missing.status_code == 404 and "no run" in missing.text
        assert "No runs yet." in ui.get("/ui/runs").text
    assert chat.requests == []


def test_a_read_only_console_refuses_runs(tmp_path: Path, chat: ScriptedChat, serve: Any) -> None:
    server = serve(chat.url, read_only=True)
    with client(server) as ui:
        csrf = logged_in(ui)
        page = ui.get("/ui/runs").text
        assert 'id="start-run"' not in page
        refused = ui.post("/ui/runs", data={"csrf": csrf, "agent": "filer", "task": TASK, "yes": "on"})
        assert refused.status_code == 403 and "read-only" in refused.text
        approve = ui.post("/ui/runs/r1999/approve", data={"csrf": csrf, "answer": "yes"})
        assert approve.status_code == 403
    assert chat.requests == [] and not (tmp_path / "notes" / "projects").exists()
