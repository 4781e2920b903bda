"""What ``ctx setup`` writes, read by the real clients (issue 49): Google's Gemini CLI and OpenAI's Codex
CLI, pinned and installed from npm by tests/gemini/install.sh and tests/codex/install.sh (skipped only
when npm or its registry cannot be reached).

- ``gemini mcp list`` reads ~/.gemini/settings.json and the project's .gemini/settings.json (comments
  and all), starts every stdio server and says whether it connected: ours does, over stdio, with no
  Google login and (where ``unshare -rn`` works) no network at all.
- ``codex mcp list --json`` and ``codex mcp get`` parse ~/.codex/config.toml as Codex does (a file it
  cannot parse is exit 1); they do not start servers, so the server itself is checked by ``ctx doctor``.

The other four have no command line that lists or checks their servers: Windsurf, Zed and LM Studio are
desktop apps; Cline's CLI (npm ``cline`` 3.0.65) has ``cline mcp add`` and ``remove`` only (it writes
~/.cline/data/settings/cline_mcp_settings.json, the file ``ctx setup cline`` writes, and its loader takes
the flat ``command``/``args`` entry as well as its own nested ``transport`` one).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from support.paths import BIN, REPO

pytestmark = pytest.mark.slow
SERVER = str(BIN / "context-harness")


def installed(client: str) -> Path:
    """``tests/CLIENT/install.sh``'s ``node_modules/.bin``; skips when npm or its registry is unreachable."""
    if shutil.which("npm") is None:
        pytest.skip(f"npm is not installed: cannot install the {client} CLI (needs npm + network)")
    result = subprocess.run(["sh", str(REPO / "tests" / client / "install.sh")], capture_output=True, text=True,
                            timeout=600)
    if result.returncode != 0:
        ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=60)
        if ping.returncode != 0:
            pytest.skip(f"the npm registry is unreachable (npm ping: {ping.stderr.strip()[-300:]})")
        raise AssertionError(f"tests/{client}/install.sh failed:\n{result.stderr[-3000:]}")
    return Path(result.stdout.strip().splitlines()[-1]) / "node_modules" / ".bin"


def offline(command: list[str]) -> list[str]:
    """``command`` in a network namespace of its own (no network at all) where this machine allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True, timeout=30).returncode == 0:
        return [unshare, "-rn", *command]
    return command


Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    for folder in ("home", "work"):
        (tmp_path / folder).mkdir()
    return tmp_path / "home"


@pytest.fixture
def run(home: Path, tmp_path: Path) -> Run:
    """``run(*command, bin_dir=None)``: a command in ``tmp_path/work`` with the temporary home and a small
    environment, the client's ``node_modules/.bin`` first on ``PATH``."""
    def invoke(*command: str, bin_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
        path = os.pathsep.join([*([str(bin_dir)] if bin_dir else []), os.environ.get("PATH", os.defpath)])
        env = {"HOME": str(home), "PATH": path, "NO_COLOR": "1", "CTX_SETUP_PLATFORM": "linux", "HF_HUB_OFFLINE": "1",
               "LANG": "C.UTF-8"}
        return subprocess.run(list(command), cwd=tmp_path / "work", env=env, capture_output=True, text=True,
                              timeout=180)
    return invoke


def setup(run: Run, *args: str) -> None:
    done = run(sys.executable, "-m", "context_harness", "setup", *args)
    assert done.returncode == 0, done.stdout + done.stderr


GEMINI_SETTINGS = """{
  // written by hand: ctx setup keeps this comment
  "general": {"vimMode": true},
  "mcpServers": {
    "gone": {"command": "/nonexistent/mcp-server", "args": []} // a server that cannot start
  }
}
"""  # comments, but no trailing commas: Gemini CLI strips comments, then JSON.parse refuses those


def test_gemini_cli_connects_to_the_servers_ctx_setup_wrote(run: Run, home: Path, kb: Path, tmp_path: Path) -> None:
    bin_dir = installed("gemini")
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(GEMINI_SETTINGS, encoding="utf-8")
    # Gemini CLI starts no stdio server in a folder the user has not trusted; this is how it records one.
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(tmp_path / "work"): "TRUST_FOLDER"}),
                                                          encoding="utf-8")
    setup(run, "gemini", "--config", str(kb))
    setup(run, "gemini", "--scope", "project", "--name", "project-kb", "--config", str(kb))
    assert "// written by hand: ctx setup keeps this comment" in settings.read_text(encoding="utf-8")

    listed = run(*offline([str(bin_dir / "gemini"), "mcp", "list"]), bin_dir=bin_dir)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    said = listed.stdout + listed.stderr  # it prints the list on stderr
    lines = {line.split(":")[0].lstrip("✓✗○ "): line for line in said.splitlines() if ": " in line}
    command = f"{SERVER} --config {kb} (stdio)"
    assert lines["context-harness"] == f"✓ context-harness: {command} - Connected", listed.stdout
    assert lines["project-kb"] == f"✓ project-kb: {command} - Connected", listed.stdout  # .gemini/settings.json
    assert lines["gone"].endswith("- Disconnected"), listed.stdout  # it does tell a server that fails


CODEX_CONFIG = """# my Codex settings: ctx setup keeps this comment
model = "gpt-5"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"

[profiles.fast]
model = "o4-mini"
"""


def test_codex_reads_the_table_ctx_setup_wrote(run: Run, home: Path, kb: Path) -> None:
    bin_dir = installed("codex")
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG, encoding="utf-8")
    setup(run, "codex", "--config", str(kb))
    setup(run, "codex", "--name", "work notes", "--config", str(kb))

    listed = run(*offline([str(bin_dir / "codex"), "mcp", "list", "--json"]), bin_dir=bin_dir)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    servers = {server["name"]: server for server in json.loads(listed.stdout)}
    assert sorted(servers) == ["context-harness", "figma", "work notes"]
    for name in ("context-harness", "work notes"):
        transport = servers[name]["transport"]
        assert (transport["type"], transport["command"], transport["args"]) == ("stdio", SERVER, ["--config", str(kb)])
        assert servers[name]["enabled"] is True
    got = run(*offline([str(bin_dir / "codex"), "mcp", "get", "context-harness"]), bin_dir=bin_dir)
    assert got.returncode == 0 and SERVER in got.stdout, got.stdout + got.stderr
    assert config.read_text(encoding="utf-8").startswith(CODEX_CONFIG.split("\n\n")[0])

    config.write_text(config.read_text(encoding="utf-8") + "[mcp_servers.broken\n", encoding="utf-8")
    broken = run(*offline([str(bin_dir / "codex"), "mcp", "list"]), bin_dir=bin_dir)
    assert broken.returncode == 1 and "unclosed table" in broken.stderr  # Codex does check what it reads
