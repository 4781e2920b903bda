"""The hooks ``ctx hook install claude-code`` writes, run by the real Claude Code (pinned, installed from npm by
tests/claude/install.sh; skipped only when Claude Code cannot be installed).

``claude -p`` with no login and no network still loads the user's settings, runs the SessionStart hooks and
validates their output before it finds that it cannot reach a model ("Not logged in"); its debug log
(``--debug-file``) says which hook ran and whether its JSON was valid. A control run with the entry spoilt
(a ``type`` Claude Code does not know) shows that the log tells the two apart.

A whole turn needs a model: here a stand-in for the Messages API on 127.0.0.1 (``ANTHROPIC_BASE_URL``) that
streams one canned answer. Claude Code then writes its own transcript and runs the Stop hook on it, and the
session note ``ctx hook stop`` makes from that real transcript is found by ``ctx search``."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from support.client_installs import installed, offline
from support.hook_turns import install_hooks, project, stand_in

pytestmark = pytest.mark.slow


def claude_session(bin_dir: Path, home: Path, cwd: Path, log: Path) -> str:
    """Start ``claude -p`` as a user would (it ends at "Not logged in"); its debug log."""
    env = {"HOME": str(home), "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", os.defpath)]),
           "LANG": "C.UTF-8", "NO_COLOR": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_TELEMETRY": "1"}
    subprocess.run(offline([str(bin_dir / "claude"), "-p", "hello", "--debug-file", str(log)]), cwd=cwd, env=env,
                   capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    return log.read_text(encoding="utf-8") if log.exists() else ""


def test_claude_code_runs_the_session_start_hook_and_takes_its_context(tmp_path: Path) -> None:
    bin_dir = installed("claude")
    at = project(tmp_path)
    home, project_dir = at.home, at.project
    install_hooks(at, "claude-code", "CLAUDE_CONFIG_DIR")

    log = claude_session(bin_dir, home, project_dir, tmp_path / "good.log")
    assert "Watching for changes in setting files" in log, log[-2000:]  # it read the settings
    ran = [line for line in log.splitlines() if "hook session-start" in line and "provided additionalContext" in line]
    assert ran, log[-3000:]
    assert "Successfully parsed and validated hook JSON output" in log
    assert "House conventions" in log  # our digest is what it took
    assert "ctx hook session-start:" not in log  # the hook said nothing went wrong

    settings = home / ".claude" / "settings.json"
    data = json.loads(settings.read_text(encoding="utf-8"))
    data["hooks"]["SessionStart"][0]["hooks"][0]["type"] = "bogus"  # the control: an entry it cannot load
    settings.write_text(json.dumps(data), encoding="utf-8")
    spoilt = claude_session(bin_dir, home, project_dir, tmp_path / "spoilt.log")
    assert "Watching for changes in setting files" in spoilt
    assert "provided additionalContext" not in spoilt and "House conventions" not in spoilt


ANSWER = "We'll keep the quokka cache at 512 entries. Done."


class Messages(BaseHTTPRequestHandler):
    """The Messages API as far as ``claude -p`` asks it: every POST answers ``ANSWER`` (streamed when asked);
    the request bodies are kept."""

    bodies: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}"
        self.bodies.append(raw.decode("utf-8", "replace"))
        body = json.loads(raw)
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "m"),
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 5, "output_tokens": 1}}
        if not body.get("stream"):
            data = json.dumps({**message, "content": [{"type": "text", "text": ANSWER}], "stop_reason": "end_turn",
                               "input_tokens": 10}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for name, data in (
                ("message_start", {"type": "message_start", "message": message}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": ANSWER}}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                   "usage": {"output_tokens": 12}}),
                ("message_stop", {"type": "message_stop"})):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()


@pytest.fixture
def messages_api() -> Iterator[str]:
    Messages.bodies = []
    with stand_in(Messages) as url:
        yield url


def test_a_turn_in_claude_code_leaves_a_session_note_made_from_its_own_transcript(tmp_path: Path,
                                                                                   messages_api: str) -> None:
    bin_dir = installed("claude")
    at = project(tmp_path)
    notes, home, project_dir, ctx = at.notes, at.home, at.project, at.ctx
    install_hooks(at, "claude-code", "CLAUDE_CONFIG_DIR")
    claude_env = {"HOME": str(home), "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", os.defpath)]),
                  "LANG": "C.UTF-8", "NO_COLOR": "1", "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": messages_api,
                  "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    done = subprocess.run([str(bin_dir / "claude"), "-p", "Cache the quokka lookups please"], cwd=project_dir,
                          env=claude_env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and ANSWER in done.stdout, done.stdout + done.stderr
    assert any("House conventions" in body for body in Messages.bodies)  # the digest reached the model
    (written,) = (notes / "sessions" / "widgetry").glob("*.md")
    text = written.read_text(encoding="utf-8")
    assert "- Cache the quokka lookups please" in text  # asked, as Claude Code recorded it
    assert "## Decided\n\n- We'll keep the quokka cache at 512 entries." in text
    assert 'client: "claude-code"' in text
    found = subprocess.run([*ctx, "search", "quokka cache", "--mode", "keyword", "--json"], capture_output=True,
                           text=True, timeout=120)
    assert json.loads(found.stdout)["results"][0]["source_id"] == f"sessions/widgetry/{written.name}"
