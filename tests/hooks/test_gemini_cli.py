"""The hooks ``ctx hook install gemini`` writes, run by the real Gemini CLI (pinned, installed from npm by
tests/gemini/install.sh; skipped only when it cannot be installed).

``gemini -p`` runs a turn against a stand-in for the Gemini API on 127.0.0.1 (``GOOGLE_GEMINI_BASE_URL``, one
canned answer; no network, no Google account): it loads the settings, runs the SessionStart hook (in
non-interactive mode it puts the hook's ``additionalContext`` before the prompt), PreCompress before its
first request and SessionEnd as it exits; its ``-d`` log says how each hook went. Its session file is the
transcript ``ctx hook stop`` reads: the note holds the prompt and the answer, not the digest."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from support.client_installs import installed
from support.hook_turns import install_hooks, project, stand_in

pytestmark = pytest.mark.slow
ANSWER = "We'll rename quux to quokka everywhere."


class GenerateContent(BaseHTTPRequestHandler):
    """The Gemini API as far as ``gemini -p -m MODEL`` asks it: every call answers ``ANSWER``; bodies are kept."""

    bodies: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))).decode("utf-8", "replace"))
        reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": ANSWER}]}, "finishReason": "STOP",
                                 "index": 0}],
                 "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10}}
        if "streamGenerateContent" in self.path:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(f"data: {json.dumps(reply)}\r\n\r\n".encode())
            return
        data = json.dumps({"totalTokens": 5} if "countTokens" in self.path else reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def gemini_api() -> Iterator[str]:
    GenerateContent.bodies = []
    with stand_in(GenerateContent) as url:
        yield url


def test_gemini_cli_runs_the_three_hooks_and_the_note_holds_the_prompt(tmp_path: Path, gemini_api: str) -> None:
    bin_dir = installed("gemini")
    at = project(tmp_path, ".gemini")
    notes, home, project_dir = at.notes, at.home, at.project
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project_dir): "TRUST_FOLDER"}),
                                                          encoding="utf-8")
    install_hooks(at, "gemini", "GEMINI_CLI_HOME")
    settings = home / ".gemini" / "settings.json"
    data = json.loads(settings.read_text(encoding="utf-8"))
    settings.write_text(json.dumps({**data, "security": {"auth": {"selectedType": "gemini-api-key"}}}),
                        encoding="utf-8")  # the user's choice of sign-in: an API key (sent to the stand-in)
    gemini_env = {"HOME": str(home), "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", os.defpath)]),
                  "LANG": "C.UTF-8", "NO_COLOR": "1", "GEMINI_API_KEY": "not-a-key",
                  "GOOGLE_GEMINI_BASE_URL": gemini_api}
    done = subprocess.run([str(bin_dir / "gemini"), "-m", "gemini-2.5-flash", "-p", "Rename the quux module", "-d"],
                          cwd=project_dir, env=gemini_env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    log = done.stdout + done.stderr
    assert ANSWER in done.stdout, log[-3000:]
    assert any("House conventions" in body for body in GenerateContent.bodies)  # the digest reached the model
    assert "Hook registry initialized with 3 hook entries" in log, log[-3000:]
    for event in ("SessionStart", "PreCompress", "SessionEnd"):
        assert f"Hook execution for {event}: 1 hooks executed successfully" in log, (event, log[-3000:])
    assert "ctx hook" not in log.replace("context-harness --config", "")  # no hook said it failed
    (written,) = (notes / "sessions" / "widgetry").glob("*.md")
    text = written.read_text(encoding="utf-8")
    assert 'client: "gemini"' in text and "## Asked\n\n- Rename the quux module\n" in text, text
    assert f"## Decided\n\n- {ANSWER}" in text
    assert "House conventions" not in text  # the digest Gemini CLI put before the prompt is not what was asked
