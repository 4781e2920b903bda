"""``ctx hook`` driven through the real CLI with Claude Code's documented hook protocol
(https://code.claude.com/docs/en/hooks): the JSON a hook gets on stdin (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, ``source``/``trigger``), the output a SessionStart hook
prints (``hookSpecificOutput.additionalContext``), and a transcript JSONL of Claude Code's records.
The notes are written into a real workspace (SQLite + Tantivy) and found by ``ctx search``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from context_harness.common.text import estimate_tokens

pytestmark = pytest.mark.slow  # a subprocess per hook call, as the client starts it (~45 s in all)
SESSION = "3f2a9c1e-1111-4d2b-9a7e-0123456789ab"


def ctx(*args: str, stdin: str = "", cwd: Path | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "context_harness", *args], input=stdin, capture_output=True,
                          text=True, timeout=120, cwd=cwd, env={**os.environ, **(env or {})})


def record(kind: str, content: Any, at: str, cwd: Path, **extra: Any) -> str:
    """One line of a Claude Code transcript."""
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": f"msg_{at}", "type": "message", "model": "claude-sonnet-4-5"}
    return json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": str(cwd),
                       "sessionId": SESSION, "version": "2.1.197", "gitBranch": "main", "type": kind,
                       "message": message, "uuid": f"u-{at}", "timestamp": at, **extra}) + "\n"


def transcript(path: Path, project: Path, more: bool = False) -> Path:
    lines = [
        record("user", "<command-name>/clear</command-name>", "2026-12-07T09:59:00.000Z", project, isMeta=True),
        record("user", "Make the flaky retry test in tests/test_retry.py deterministic", "2026-12-07T10:00:00.000Z",
               project),
        record("assistant", [{"type": "text", "text": "It sleeps on the wall clock. I'll use a fake clock instead "
                              "of time.sleep so it never races."},
                             {"type": "tool_use", "id": "toolu_1", "name": "Edit",
                              "input": {"file_path": str(project / "tests" / "test_retry.py"),
                                        "old_string": "time.sleep(1)", "new_string": "clock.advance(1)"}}],
               "2026-12-07T10:00:05.000Z", project),
        record("user", [{"tool_use_id": "toolu_1", "type": "tool_result", "content": "The file has been updated."}],
               "2026-12-07T10:00:06.000Z", project),
        record("assistant", [{"type": "text", "text": "Done: the retry test advances a fake clock now."}],
               "2026-12-07T10:00:09.000Z", project),
    ]
    if more:
        lines += [
            record("user", "Also document the quokka clock in the README", "2026-12-07T10:05:00.000Z", project),
            record("assistant", [{"type": "tool_use", "id": "toolu_2", "name": "Write",
                                  "input": {"file_path": str(project / "README.md"), "content": "..."}},
                                 {"type": "text", "text": "The README explains the quokka clock."}],
                   "2026-12-07T10:05:09.000Z", project),
        ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """A workspace over ``notes/`` (writable, the hooks' inbox) with a pinned note and one about the project."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "conventions.md").write_text("---\ntags: [pinned]\n---\n# House conventions\n\nAlways run ruff "
                                          "before committing.\n", encoding="utf-8")
    (notes / "widgetry.md").write_text("# Widgetry release plan\n\nThe widgetry project ships in March.\n",
                                       encoding="utf-8")
    for i in range(30):
        (notes / f"filler{i:02}.md").write_text(f"# Filler {i}\n\nPlain words number {i} about gardens.\n",
                                               encoding="utf-8")
    config = tmp_path / "ctx.toml"
    config.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                      '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n'
                      '[hooks]\ninbox = "filesystem:notes"\n', encoding="utf-8")
    done = ctx("--config", str(config), "sync")
    assert done.returncode == 0, done.stderr
    return config


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository named widgetry, worked in from a subfolder."""
    folder = tmp_path / "code" / "widgetry"
    (folder / ".git").mkdir(parents=True)
    (folder / "src").mkdir()
    return folder / "src"


def start_event(cwd: Path, source: str = "startup") -> str:
    return json.dumps({"session_id": "new-session", "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
                       "hook_event_name": "SessionStart", "source": source})


def context_of(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return str(output["hookSpecificOutput"]["additionalContext"])


def test_session_start_prints_pinned_notes_and_what_matches_the_project(kb: Path, project: Path) -> None:
    context = context_of(ctx("--config", str(kb), "hook", "session-start", stdin=start_event(project)))
    assert "for project widgetry" in context
    assert "## Pinned notes" in context and "House conventions" in context and "Always run ruff" in context
    assert "## About widgetry" in context and "Widgetry release plan" in context
    assert "## Changed in the last 7 days" in context
    assert context.index("House conventions") < context.index("Widgetry release plan")
    assert estimate_tokens(context) <= 2000


def test_session_start_keeps_within_the_budget_and_says_what_it_left_out(kb: Path, project: Path) -> None:
    kb.write_text(kb.read_text(encoding="utf-8") + "budget_tokens = 100\n", encoding="utf-8")
    context = context_of(ctx("--config", str(kb), "hook", "session-start", stdin=start_event(project)))
    assert estimate_tokens(context) <= 100, context
    assert "House conventions" in context  # pinned first
    assert "left out for the token budget" in context


def test_pre_compact_then_stop_write_one_dated_note_found_by_search(kb: Path, project: Path, tmp_path: Path) -> None:
    path = transcript(tmp_path / "session.jsonl", project)
    event = {"session_id": SESSION, "transcript_path": str(path), "cwd": str(project), "hook_event_name": "PreCompact",
             "trigger": "auto", "custom_instructions": ""}
    done = ctx("--config", str(kb), "hook", "pre-compact", stdin=json.dumps(event))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    transcript(path, project, more=True)  # the session goes on; Stop fires after the next answer
    event |= {"hook_event_name": "Stop", "stop_hook_active": False}
    done = ctx("--config", str(kb), "hook", "stop", stdin=json.dumps(event))
    assert (done.returncode, done.stderr) == (0, "")
    written = next((tmp_path / "notes" / "sessions").rglob("*.md"))
    before = written.stat().st_mtime_ns
    again = ctx("--config", str(kb), "hook", "stop", stdin=json.dumps(event))  # an answer that changed nothing
    assert (again.returncode, again.stderr) == (0, "") and written.stat().st_mtime_ns == before
    notes = sorted((tmp_path / "notes" / "sessions").rglob("*.md"))
    assert [n.relative_to(tmp_path / "notes").as_posix() for n in notes] == ["sessions/widgetry/2026-12-07-3f2a9c1e.md"]
    text = notes[0].read_text(encoding="utf-8")
    assert "date: 2026-12-07" in text and '"project:widgetry"' in text
    assert "# Session 2026-12-07 · widgetry · Make the flaky retry test" in text
    assert "- Make the flaky retry test in tests/test_retry.py deterministic" in text
    assert "/clear" not in text  # a slash command's echo is not what the user asked
    assert "I'll use a fake clock instead of time.sleep so it never races." in text  # decided
    assert "- `src/tests/test_retry.py`" not in text and "- `tests/test_retry.py`" in text
    assert "- `README.md`" in text
    found = ctx("--config", str(kb), "search", "quokka clock", "--mode", "keyword", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert hits and hits[0]["source_id"] == "sessions/widgetry/2026-12-07-3f2a9c1e.md"


def test_a_new_session_links_the_previous_one_and_the_next_start_brings_it_back(kb: Path, project: Path,
                                                                                  tmp_path: Path) -> None:
    first = transcript(tmp_path / "first.jsonl", project)
    assert ctx("--config", str(kb), "hook", "stop", stdin=json.dumps(
        {"session_id": SESSION, "transcript_path": str(first), "cwd": str(project), "hook_event_name": "Stop"}
    )).returncode == 0
    second = tmp_path / "second.jsonl"
    second.write_text(record("user", "Now speed up the widget cache", "2026-12-08T08:00:00.000Z", project),
                      encoding="utf-8")
    done = ctx("--config", str(kb), "hook", "stop", stdin=json.dumps(
        {"session_id": "9d9d9d9d-2222", "transcript_path": str(second), "cwd": str(project),
         "hook_event_name": "Stop"}))
    assert (done.returncode, done.stderr) == (0, "")
    newer = (tmp_path / "notes" / "sessions" / "widgetry" / "2026-12-08-9d9d9d9d.md").read_text(encoding="utf-8")
    assert "Previous session: [[2026-12-07-3f2a9c1e]]" in newer
    related = ctx("--config", str(kb), "search", "widget cache", "--mode", "keyword", "--json")
    newer_id = json.loads(related.stdout)["results"][0]["id"]
    links = json.loads(ctx("--config", str(kb), "related", newer_id, "--json").stdout)
    assert [item["source_id"] for item in links["links_to"]] == ["sessions/widgetry/2026-12-07-3f2a9c1e.md"]
    context = context_of(ctx("--config", str(kb), "hook", "session-start", stdin=start_event(project, "compact")))
    assert "## Last sessions on widgetry" in context
    assert context.index("2026-12-08 · widgetry · Now speed up") < context.index("2026-12-07 · widgetry")


@pytest.mark.parametrize(("stdin", "args", "said"), [
    ("{not json", ("hook", "session-start"), "the hook's input is not JSON"),
    ('{"cwd": "/"}', ("--config", "/nonexistent/ctx.toml", "hook", "session-start"), "does not exist"),
    ('{"session_id": "x", "cwd": "/"}', ("hook", "stop"), "names no transcript_path"),
    ('{"session_id": "x", "transcript_path": "/nonexistent.jsonl"}', ("hook", "pre-compact"), "cannot be read"),
])
def test_a_failing_hook_says_one_line_and_never_fails_the_session(kb: Path, stdin: str, args: tuple[str, ...],
                                                                   said: str) -> None:
    given = args if "--config" in args else ("--config", str(kb), *args)
    done = ctx(*given, stdin=stdin)
    assert done.returncode == 0 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, done.stderr


def test_without_an_inbox_nothing_is_written(kb: Path, project: Path, tmp_path: Path) -> None:
    kb.write_text(kb.read_text(encoding="utf-8").replace('inbox = "filesystem:notes"\n', ""), encoding="utf-8")
    path = transcript(tmp_path / "session.jsonl", project)
    done = ctx("--config", str(kb), "hook", "stop", stdin=json.dumps(
        {"session_id": SESSION, "transcript_path": str(path), "cwd": str(project), "hook_event_name": "Stop"}))
    assert done.returncode == 0 and "[hooks] inbox is not set" in done.stderr
    assert not (tmp_path / "notes" / "sessions").exists()


def test_with_a_model_pre_compact_adds_a_summary_that_later_stops_keep(kb: Path, project: Path,
                                                                         tmp_path: Path) -> None:
    from support.chat_server import ScriptedChat, message, status

    path = transcript(tmp_path / "session.jsonl", project)
    event = {"session_id": SESSION, "transcript_path": str(path), "cwd": str(project)}
    summary = "The goal was a deterministic retry test; a fake clock replaced time.sleep. Nothing is left."
    with ScriptedChat([message(summary), status(500, "down")], model="local") as chat:
        kb.write_text(kb.read_text(encoding="utf-8") + f'model = "local"\n[models.local]\nurl = "{chat.url}"\n'
                      'model = "local"\n', encoding="utf-8")
        done = ctx("--config", str(kb), "hook", "pre-compact", stdin=json.dumps({**event, "hook_event_name": "PreCompact"}))
        assert (done.returncode, done.stderr) == (0, "")
        note = tmp_path / "notes" / "sessions" / "widgetry" / "2026-12-07-3f2a9c1e.md"
        assert f"## Summary\n\n{summary}\n\n## Asked" in note.read_text(encoding="utf-8")
        sent = chat.requests[0]["messages"]
        assert sent[0]["role"] == "system" and "User: Make the flaky retry test" in sent[1]["content"]
        transcript(path, project, more=True)
        done = ctx("--config", str(kb), "hook", "stop", stdin=json.dumps({**event, "hook_event_name": "Stop"}))
        assert (done.returncode, done.stderr) == (0, "") and len(chat.requests) == 1  # stop asks no model
        text = note.read_text(encoding="utf-8")
        assert f"## Summary\n\n{summary}\n" in text and "quokka clock" in text
        done = ctx("--config", str(kb), "hook", "pre-compact", stdin=json.dumps({**event, "hook_event_name": "PreCompact"}))
        assert done.returncode == 0 and done.stderr.startswith("ctx hook pre-compact: no summary: model 'local'")
        assert f"## Summary\n\n{summary}\n" in note.read_text(encoding="utf-8")  # a model down keeps the last one
