"""The hooks ``ctx hook install codex`` writes (``~/.codex/hooks.json``), run by the real Codex CLI (pinned,
installed from npm by tests/codex/install.sh; skipped only when it cannot be installed).

``codex exec`` runs a turn against a stand-in for the Responses API on 127.0.0.1 (a model provider of the
test's config.toml, one canned answer; no network, no OpenAI account). Codex runs a hook it does not manage
only once trusted; ``--dangerously-bypass-hook-trust`` stands for the user's review here. The SessionStart
hook's digest reaches the model's request, and the Stop hook writes the note from Codex's own rollout file."""

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
ANSWER = "We'll cache the widget lookups in an LRU."


class Responses(BaseHTTPRequestHandler):
    """The Responses API as far as ``codex exec`` asks it: every request streams ``ANSWER``; bodies are kept."""

    bodies: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))).decode("utf-8", "replace"))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}
        usage = {"input_tokens": 5, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 10}
        for event in ({"type": "response.created", "response": {"id": "resp_1"}},
                      {"type": "response.output_item.done", "output_index": 0, "item": item},
                      {"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                                                                  "output": [item], "usage": usage}}):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())


@pytest.fixture
def responses_api() -> Iterator[str]:
    Responses.bodies = []
    with stand_in(Responses, "/v1") as url:
        yield url


def test_codex_runs_the_hooks_the_model_gets_the_digest_and_the_note_is_written(tmp_path: Path,
                                                                                responses_api: str) -> None:
    bin_dir = installed("codex")
    at = project(tmp_path, ".codex")
    notes, home, project_dir, ctx = at.notes, at.home, at.project, at.ctx
    (home / ".codex" / "config.toml").write_text(
        f'model = "gpt-test"\nmodel_provider = "standin"\n\n[model_providers.standin]\nname = "standin"\n'
        f'base_url = "{responses_api}"\nwire_api = "responses"\nenv_key = "STANDIN_KEY"\n', encoding="utf-8")
    install_hooks(at, "codex", "CODEX_HOME")
    codex_env = {"HOME": str(home), "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", os.defpath)]),
                 "LANG": "C.UTF-8", "NO_COLOR": "1", "STANDIN_KEY": "not-a-key"}
    done = subprocess.run([str(bin_dir / "codex"), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
                           "Cache the widget lookups"], cwd=project_dir, env=codex_env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    log = done.stdout + done.stderr
    assert done.returncode == 0 and ANSWER in done.stdout, log[-3000:]
    assert "hook: SessionStart Completed" in log and "hook: Stop Completed" in log, log[-3000:]
    assert any("House conventions" in body for body in Responses.bodies)  # the digest reached the model
    (written,) = (notes / "sessions" / "widgetry").glob("*.md")
    text = written.read_text(encoding="utf-8")
    assert 'client: "codex"' in text and "## Asked\n\n- Cache the widget lookups\n" in text, text
    assert f"## Decided\n\n- {ANSWER}" in text
    found = subprocess.run([*ctx, "search", "widget lookups LRU", "--mode", "keyword", "--json"],
                           capture_output=True, text=True, timeout=120)
    assert json.loads(found.stdout)["results"][0]["source_id"] == f"sessions/widgetry/{written.name}"
