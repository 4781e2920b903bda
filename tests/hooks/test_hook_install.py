"""``ctx hook install CLIENT`` through the real CLI: the entries merged into the client's settings file (Claude
Code's settings.json, Codex's hooks.json, Gemini CLI's settings.json with comments), the user's own hooks and
keys kept, a backup made, a second run a no-op; and ``--print`` writes nothing."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from context_harness.cli.file_edit import read_jsonc

pytestmark = pytest.mark.slow


def ctx(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")}
    return subprocess.run([sys.executable, "-m", "context_harness", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={**env, "HOME": str(home)})


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    config = tmp_path / "ctx.toml"
    config.write_text('[db]\npath = "data/ctx.sqlite"\n[connectors.filesystem.notes]\nroot = "notes"\n',
                      encoding="utf-8")
    return config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path / "home"


def ours(groups: list[dict], subcommand: str) -> list[str]:
    return [h["command"] for g in groups for h in g["hooks"] if f"hook {subcommand}" in h["command"]]


def test_claude_code_user_settings_get_the_three_hooks_once(home: Path, kb: Path, tmp_path: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}
    settings.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [theirs],
                                                               "Stop": [{"hooks": [{"type": "command",
                                                                                    "command": "say done"}]}]}}),
                        encoding="utf-8")
    done = ctx(home, tmp_path / "work", "hook", "install", "claude-code", "--config", str(kb))
    assert done.returncode == 0, done.stderr
    data = json.loads(settings.read_text(encoding="utf-8"))
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"] == [theirs]
    hooks = data["hooks"]
    assert hooks["Stop"][0] == {"hooks": [{"type": "command", "command": "say done"}]}
    for event, sub, timeout in (("SessionStart", "session-start", 10), ("PreCompact", "pre-compact", 60),
                                ("Stop", "stop", 60)):
        (command,) = ours(hooks[event], sub)
        words = shlex.split(command)
        assert words[1:3] == ["--config", str(kb.resolve())] and words[3:5] == ["hook", sub], command
        assert Path(words[0]).name == "context-harness"
        entry = next(h for g in hooks[event] for h in g["hooks"] if h["command"] == command)
        assert entry == {"type": "command", "command": command, "timeout": timeout}
    assert len(list(settings.parent.glob("settings.json.bak-*"))) == 1
    assert "warning: [hooks] inbox is not set" in done.stderr  # this config has none
    again = ctx(home, tmp_path / "work", "hook", "install", "claude-code", "--config", str(kb))
    assert again.returncode == 0 and "already has these hooks; nothing changed" in again.stdout
    assert json.loads(settings.read_text(encoding="utf-8")) == data


def test_print_writes_nothing_and_project_scope_writes_the_projects_file(home: Path, kb: Path,
                                                                         tmp_path: Path) -> None:
    work = tmp_path / "work"
    shown = ctx(home, work, "hook", "install", "claude-code", "--scope", "project", "--print", "--config", str(kb))
    assert shown.returncode == 0 and "--print: nothing written" in shown.stdout and '"SessionStart"' in shown.stdout
    assert not (work / ".claude").exists()
    done = ctx(home, work, "hook", "install", "claude-code", "--scope", "project", "--config", str(kb))
    assert done.returncode == 0, done.stderr
    assert set(json.loads((work / ".claude" / "settings.json").read_text(encoding="utf-8"))["hooks"]) == {
        "SessionStart", "PreCompact", "Stop"}


def test_codex_gets_hooks_json(home: Path, kb: Path, tmp_path: Path) -> None:
    done = ctx(home, tmp_path / "work", "hook", "install", "codex", "--config", str(kb))
    assert done.returncode == 0, done.stderr
    assert "/hooks in Codex" in done.stdout
    hooks = json.loads((home / ".codex" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    assert set(hooks) == {"SessionStart", "PreCompact", "Stop"}
    assert ours(hooks["Stop"], "stop")[0].endswith("hook stop --client codex")


GEMINI = """{
  // mine: kept
  "general": {"vimMode": true},
  "hooks": {
    "BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "lint.sh"}]}]
  }
}
"""


def test_gemini_settings_keep_their_comments_and_count_milliseconds(home: Path, kb: Path, tmp_path: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(GEMINI, encoding="utf-8")
    done = ctx(home, tmp_path / "work", "hook", "install", "gemini", "--config", str(kb))
    assert done.returncode == 0, done.stderr
    text = settings.read_text(encoding="utf-8")
    assert "// mine: kept" in text
    data, _ = read_jsonc(text)
    assert data["general"] == {"vimMode": True} and data["hooks"]["BeforeTool"][0]["matcher"] == "write_file"
    assert set(data["hooks"]) == {"BeforeTool", "SessionStart", "PreCompress", "SessionEnd"}
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] == 10_000
    assert ours(data["hooks"]["SessionEnd"], "stop")
    again = ctx(home, tmp_path / "work", "hook", "install", "gemini", "--config", str(kb))
    assert "nothing changed" in again.stdout and settings.read_text(encoding="utf-8") == text


def test_a_settings_file_that_is_not_json_is_left_alone(home: Path, kb: Path, tmp_path: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"Stop": {"not": "a list"}}}', encoding="utf-8")
    done = ctx(home, tmp_path / "work", "hook", "install", "claude-code", "--config", str(kb))
    assert done.returncode == 1 and "not a list of groups" in done.stderr
    assert settings.read_text(encoding="utf-8") == '{"hooks": {"Stop": {"not": "a list"}}}'
