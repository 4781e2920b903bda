"""The hooks ``ctx hook install claude-code`` writes, run by the real Claude Code (pinned, installed from npm by
tests/claude/install.sh; skipped only when Claude Code cannot be installed).

``claude -p`` with no login and no network still loads the user's settings, runs the SessionStart hooks and
validates their output before it finds that it cannot reach a model ("Not logged in"); its debug log
(``--debug-file``) says which hook ran and whether its JSON was valid. A control run with the entry spoilt
(a ``type`` Claude Code does not know) shows that the log tells the two apart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import REPO

pytestmark = pytest.mark.slow


def installed() -> Path:
    """tests/claude/install.sh's ``node_modules/.bin``; skips when npm or its registry is unreachable."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: cannot install Claude Code (needs npm + network)")
    done = subprocess.run(["sh", str(REPO / "tests" / "claude" / "install.sh")], capture_output=True, text=True,
                          timeout=900)
    if done.returncode != 0:
        ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=60)
        if ping.returncode != 0:
            pytest.skip(f"Claude Code is not installed and the npm registry is unreachable ({ping.stderr[-300:]})")
        raise AssertionError(f"tests/claude/install.sh failed:\n{done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1]) / "node_modules" / ".bin"


def offline(command: list[str]) -> list[str]:
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True, timeout=30).returncode == 0:
        return [unshare, "-rn", *command]
    return command


def claude_session(bin_dir: Path, home: Path, cwd: Path, log: Path) -> str:
    """Start ``claude -p`` as a user would (it ends at "Not logged in"); its debug log."""
    env = {"HOME": str(home), "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", os.defpath)]),
           "LANG": "C.UTF-8", "NO_COLOR": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_TELEMETRY": "1"}
    subprocess.run(offline([str(bin_dir / "claude"), "-p", "hello", "--debug-file", str(log)]), cwd=cwd, env=env,
                   capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    return log.read_text(encoding="utf-8") if log.exists() else ""


def test_claude_code_runs_the_session_start_hook_and_takes_its_context(tmp_path: Path) -> None:
    bin_dir = installed()
    notes, home, project = tmp_path / "notes", tmp_path / "home", tmp_path / "widgetry"
    for folder in (notes, home, project / ".git"):
        folder.mkdir(parents=True)
    (notes / "conventions.md").write_text("---\ntags: [pinned]\n---\n# House conventions\n\nAlways run the "
                                          "linter first.\n", encoding="utf-8")
    config = tmp_path / "ctx.toml"
    config.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                      '[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n'
                      '[hooks]\ninbox = "filesystem:notes"\n', encoding="utf-8")
    ctx = [sys.executable, "-m", "context_harness", "--config", str(config)]
    assert subprocess.run([*ctx, "sync"], capture_output=True, timeout=120).returncode == 0
    env = {**os.environ, "HOME": str(home)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    done = subprocess.run([*ctx, "hook", "install", "claude-code"], capture_output=True, text=True, timeout=120,
                          cwd=project, env=env)
    assert done.returncode == 0, done.stderr

    log = claude_session(bin_dir, home, project, tmp_path / "good.log")
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
    spoilt = claude_session(bin_dir, home, project, tmp_path / "spoilt.log")
    assert "Watching for changes in setting files" in spoilt
    assert "provided additionalContext" not in spoilt and "House conventions" not in spoilt
