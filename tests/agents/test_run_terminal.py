"""A person at a real terminal answering an agent run's questions (issue 55): keys typed before a
question is shown answer nothing (a ``y`` typed while the model was thinking, or a doubled ``y⏎y``
that answered the next prompt, a ``note_delete``, before it was shown), and what the model sends is
shown with its control and bidirectional characters escaped, never acted on by the terminal.

``ctx agent run`` runs in a subprocess with stdin and stderr on a pty (``pty.openpty``), against the
scripted chat server; ``Terminal`` waits for text on the pty and types."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

from context_harness.store.records import document_id
from support.agent_runs import NOTE, TASK, run_workspace, synced
from support.chat_server import ScriptedChat, delay, message, raw_arguments, tool_calls

PROMPT = b"allow? [y]es / [n]o / [a]lways for this run [n]: "
LIMIT = 30.0  # seconds to wait for what the terminal should show


class Terminal:
    """``ctx agent run AGENT TASK`` at a pty: ``wait_for(text)``, ``type(keys)``, ``close()``."""

    def __init__(self, root: Path, agent: str) -> None:
        import pty

        self.main, child = pty.openpty()
        env = {**os.environ, "NO_COLOR": "1"}
        env.pop("CTX_CONFIG", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "context_harness", "agent", "run", agent, TASK],
                                     cwd=root, env=env, stdin=child, stderr=child, stdout=subprocess.PIPE)
        os.close(child)
        self.seen = b""
        self.out = b""

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.main], [], [], 0.05)
            if ready:
                try:
                    self.seen += os.read(self.main, 65536)
                except OSError:
                    return

    def wait_for(self, text: bytes, count: int = 1) -> None:
        deadline = time.monotonic() + LIMIT
        while self.seen.count(text) < count:
            assert time.monotonic() < deadline and self.proc.poll() is None, self.seen.decode("utf-8", "replace")
            self.read(0.05)

    def type(self, keys: bytes) -> None:
        os.write(self.main, keys)

    def close(self) -> str:
        try:
            self.out, _ = self.proc.communicate(timeout=LIMIT)
            self.read(0.2)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate()
            os.close(self.main)
        shown = self.seen.decode("utf-8", "replace")
        assert "Traceback" not in shown, shown
        return shown


def test_keys_typed_while_the_model_thinks_answer_nothing(tmp_path: Path) -> None:
    """``y`` typed while the model takes 2 s to ask for a write: the question, once shown, still waits,
    and the ``n`` typed to it is the answer."""
    script = [delay(2.0, tool_calls([("note_write", NOTE)])), message("Done.")]
    with ScriptedChat(script, model="local") as chat:
        run_workspace(tmp_path, chat.url)
        term = Terminal(tmp_path, "filer")
        term.wait_for(b"tools: search, get, note_write")
        term.type(b"y\n")  # typed ahead, while the model is thinking
        term.wait_for(PROMPT)
        term.read(0.5)
        assert b"approved by a person" not in term.seen, "the typed-ahead y answered the question"
        term.type(b"n\n")
        shown = term.close()
    assert term.proc.returncode == 0, shown
    assert "note_write: not approved (a person said no)" in shown
    assert not (tmp_path / "notes" / "projects" / "meeting.md").exists()


def test_a_doubled_yes_answers_one_question(tmp_path: Path) -> None:
    """``y⏎y⏎`` at the first question (a write) answers it; the second question (a delete) is shown and
    waits for its own answer."""
    doomed = tmp_path / "notes" / "doomed.md"
    delete = {"id": document_id("filesystem:notes", "doomed.md")}
    script = [tool_calls([("note_write", NOTE)]), delay(1.0, tool_calls([("note_delete", delete)])), message("Done.")]
    with ScriptedChat(script, model="local") as chat:
        run_workspace(tmp_path, chat.url, extra="""
            [agents.cleaner]
            description = "Files and deletes"
            tools = ["note_write", "note_delete"]
            system_prompt = "You tidy."
            """)
        doomed.write_text("# Doomed\n\nKeep me.\n", encoding="utf-8")
        synced(tmp_path)
        term = Terminal(tmp_path, "cleaner")
        term.wait_for(PROMPT)
        term.type(b"y\ny\n")
        term.wait_for(PROMPT, 2)
        term.read(0.5)
        assert b"note_delete: approved" not in term.seen, "the second y answered the delete before it was shown"
        term.type(b"n\n")
        shown = term.close()
    assert "note_write: approved by a person" in shown
    assert "note_delete: not approved (a person said no)" in shown
    assert doomed.is_file()
    assert (tmp_path / "notes" / "projects" / "meeting.md").is_file()


def test_control_and_bidirectional_characters_are_shown_escaped(tmp_path: Path) -> None:
    """A model's arguments holding ESC sequences (a colour, an OSC title, a screen clear) and U+202E
    reach the terminal as visible escapes, in the step lines and in the question."""
    hostile = {**NOTE, "path": "projects/\u202etxt.exe", "content": "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1m"}
    script = [raw_arguments("search", '{"query": "\x1b[2J\x1b]0;raw\x07\u202e"}'), tool_calls([("note_write", hostile)]),
              message("Done \x1b[5mblink")]
    with ScriptedChat(script, model="local") as chat:
        run_workspace(tmp_path, chat.url)
        term = Terminal(tmp_path, "filer")
        term.wait_for(PROMPT)
        term.type(b"n\n")
        shown = term.close()
    out, raw = term.out, term.seen
    for control in (b"\x1b", b"\x07", "\u202e".encode(), "\x9b".encode()):
        assert control not in raw, f"{control!r} reached the terminal raw:\n{shown}"
    assert "\\u202etxt.exe" in shown and "\\u001b]0;owned\\u0007" in shown and "\\x9b1m" in shown
    assert '→ search {"query": "\\x1b[2J\\x1b]0;raw\\x07\\u202e"}' in shown, "the raw arguments' step line"
    assert out.strip().startswith(b"Done") and b"\x1b" not in out
