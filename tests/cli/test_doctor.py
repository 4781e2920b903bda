"""``ctx doctor``: the real ``ctx`` in a subprocess, with a temporary home holding real client config
files, starts the server each entry names exactly as the client would (command, args, env, folder),
shakes hands over MCP and searches; it names the bad key of a broken config, the unset variable of
another (and that the shell has it but the client does not pass it), a command that is gone, and a
client with no entry, with exit 1; a working setup passes with exit 0 (issue 41)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import BIN
from support.workspace import E2E_DOCS, config_toml, write_files

pytestmark = pytest.mark.slow  # each check starts a server
SERVER = str(BIN / "context-harness")
VAR = "CTX_TEST_DOCTOR_DOCS"


def doctor(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CTX_CONFIG", VAR, "CLAUDE_CONFIG_DIR")}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
               XDG_DATA_HOME=str(tmp_path / "xdg-data"), CTX_SETUP_PLATFORM="linux", NO_COLOR="1",
               HF_HUB_OFFLINE="1", **extra)
    return subprocess.run([sys.executable, "-m", "context_harness", "doctor", *args], cwd=tmp_path / "work",
                          env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "home").mkdir()
    write_files(tmp_path / "kb" / "docs", E2E_DOCS)
    config = tmp_path / "kb" / "ctx.toml"
    config.write_text(config_toml(), encoding="utf-8")
    return config


def client_file(tmp_path: Path, client: str, entry: dict[str, object]) -> Path:
    path = {"claude-desktop": tmp_path / "home" / ".config" / "Claude" / "claude_desktop_config.json",
            "claude-code": tmp_path / "home" / ".claude.json"}[client]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {"context-harness": entry}}), encoding="utf-8")
    return path


def test_a_working_entry_passes_and_prints_an_inspector_command_with_the_separator(tmp_path: Path, kb: Path) -> None:
    client_file(tmp_path, "claude-code", {"type": "stdio", "command": SERVER, "args": ["--config", str(kb)]})
    done = doctor(tmp_path, "claude-code")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Claude Code (user) ") and "  ok: MCP handshake in " in done.stdout
    assert re.search(r"\n  ok: 1 source\(s\), \d documents, none failing\n", done.stdout)
    assert f"  by hand: npx @modelcontextprotocol/inspector@2.12.0 --cli --method tools/list -- {SERVER} --config {kb}" in (
        lines)


def test_a_broken_config_names_the_bad_key_and_shows_the_hidden_stderr(tmp_path: Path, kb: Path) -> None:
    kb.write_text(config_toml() + "\n[retrieval]\nfinal_limt = 3\n", encoding="utf-8")
    client_file(tmp_path, "claude-desktop", {"command": SERVER, "args": ["--config", str(kb)]})
    done = doctor(tmp_path)  # no CLIENT: every client file that has the server
    assert done.returncode == 1
    failed = next(line for line in done.stdout.splitlines() if line.startswith("  FAILED: "))
    assert failed.startswith(f"  FAILED: {kb}: retrieval.final_limt: unknown key")
    assert "the server's stderr (which Claude Desktop does not show):" in done.stdout
    assert f"    | error: {kb}: retrieval.final_limt: unknown key" in done.stdout
    assert f"(in {os.sep})" in done.stdout  # Claude Desktop starts servers in /


def test_an_unset_variable_is_named_and_one_the_client_does_not_pass_is_pointed_out(tmp_path: Path,
                                                                                    kb: Path) -> None:
    kb.write_text(config_toml(docs_root=f"${{{VAR}}}"), encoding="utf-8")
    path = client_file(tmp_path, "claude-desktop", {"command": SERVER, "args": ["--config", str(kb)]})
    done = doctor(tmp_path, "claude-desktop")
    assert done.returncode == 1
    assert (f"  FAILED: source filesystem:docs is failing: environment variable {VAR} not set (needed by "
            "[connectors.filesystem.docs])") in done.stdout
    assert "ok: MCP handshake" in done.stdout  # the rest of the config serves

    in_shell = doctor(tmp_path, "claude-desktop", **{VAR: str(tmp_path / "kb" / "docs")})
    assert in_shell.returncode == 1  # Claude Desktop passes only the SDK's default variables and "env"
    assert (f"{VAR} is set in this shell, not in what Claude Desktop passes: add \"env\": {{\"{VAR}\": \"...\"}} "
            f"to the entry in {path}") in in_shell.stdout

    client_file(tmp_path, "claude-desktop", {"command": SERVER, "args": ["--config", str(kb)],
                                             "env": {VAR: str(tmp_path / "kb" / "docs")}})
    fixed = doctor(tmp_path, "claude-desktop")
    assert fixed.returncode == 0, fixed.stdout


def test_a_command_that_is_gone_and_a_client_without_the_server(tmp_path: Path, kb: Path) -> None:
    gone = str(tmp_path / "old-venv" / "bin" / "context-harness")
    client_file(tmp_path, "claude-code", {"type": "stdio", "command": gone, "args": ["--config", str(kb)]})
    done = doctor(tmp_path, "claude-code")
    assert done.returncode == 1
    assert f"  FAILED: cannot run {gone!r}: no such program here" in done.stdout
    assert "run `ctx setup claude-code` again" in done.stdout

    missing = doctor(tmp_path, "cursor")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("error: no server 'context-harness' in ")
    assert missing.stderr.strip().endswith("run `ctx setup cursor` first")


def test_what_ctx_setup_writes_passes_and_setup_says_how_to_check_it(tmp_path: Path, kb: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("CTX_CONFIG", "CLAUDE_CONFIG_DIR")}
    env.update(HOME=str(tmp_path / "home"), CTX_SETUP_PLATFORM="linux", NO_COLOR="1")
    setup = subprocess.run([sys.executable, "-m", "context_harness", "setup", "claude-code", "--config", str(kb)],
                           cwd=tmp_path / "work", env=env, capture_output=True, text=True, timeout=60)
    assert setup.returncode == 0, setup.stderr
    assert setup.stdout.splitlines()[-1] == "check it as Claude Code will start it: ctx doctor claude-code"
    done = doctor(tmp_path, "claude-code")
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith(f"Claude Code (user) {tmp_path / 'home' / '.claude.json'}\n")


# -- the six clients of issue 49: their files and formats, the environment each passes -------------------

ZED_SETTINGS = """// Zed settings
{
  "theme": "One Dark", // mine
  "context_servers": {
    "context-harness": {"command": "%s", "args": ["--config", "%s"]},
  },
}
"""


def test_zed_and_codex_entries_are_found_in_their_own_formats_and_pass(tmp_path: Path, kb: Path) -> None:
    zed = tmp_path / "home" / ".config" / "zed" / "settings.json"
    zed.parent.mkdir(parents=True)
    zed.write_text(ZED_SETTINGS % (SERVER, kb), encoding="utf-8")  # JSON with comments and trailing commas
    done = doctor(tmp_path, "zed")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"Zed (user) {zed}\n") and "  ok: MCP handshake in " in done.stdout

    codex = tmp_path / "work" / ".codex" / "config.toml"  # a project's: this installation's server, so it starts
    codex.parent.mkdir()
    codex.write_text(f'# mine\n[mcp_servers.context-harness]\ncommand = "{SERVER}"\nargs = ["--config", "{kb}"]\n',
                     encoding="utf-8")
    done = doctor(tmp_path, "codex")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"Codex (project) {codex}\n") and "  ok: MCP handshake in " in done.stdout


def test_a_gone_command_and_a_missing_entry_name_the_clients_own_fix(tmp_path: Path, kb: Path) -> None:
    gone = str(tmp_path / "old-venv" / "bin" / "context-harness")
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"mcpServers": {"context-harness": {"command": gone, "args": []}}}),
                        encoding="utf-8")
    done = doctor(tmp_path, "gemini")
    assert done.returncode == 1
    assert f"  FAILED: cannot run {gone!r}: no such program here" in done.stdout
    assert "run `ctx setup gemini` again" in done.stdout

    missing = doctor(tmp_path, "lm-studio")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip() == (f"error: no server 'context-harness' in {tmp_path / 'home' / '.lmstudio' / 'mcp.json'}"
                                      ": run `ctx setup lm-studio` first")


def test_gemini_cli_passes_the_shells_variables_and_windsurf_does_not(tmp_path: Path, kb: Path) -> None:
    kb.write_text(config_toml(docs_root=f"${{{VAR}}}"), encoding="utf-8")
    entry = {"command": SERVER, "args": ["--config", str(kb)]}
    for path in (tmp_path / "home" / ".gemini" / "settings.json",
                 tmp_path / "home" / ".codeium" / "windsurf" / "mcp_config.json"):
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"mcpServers": {"context-harness": entry}}), encoding="utf-8")
    docs = str(tmp_path / "kb" / "docs")
    gemini = doctor(tmp_path, "gemini", **{VAR: docs})
    assert gemini.returncode == 0, gemini.stdout  # started from this shell, it passes the shell's variables
    windsurf = doctor(tmp_path, "windsurf", **{VAR: docs})
    assert windsurf.returncode == 1
    assert (f"{VAR} is set in this shell, not in what Windsurf passes: add \"env\": {{\"{VAR}\": \"...\"}} to the "
            f"entry in {tmp_path / 'home' / '.codeium' / 'windsurf' / 'mcp_config.json'}") in windsurf.stdout


def test_without_a_client_an_unreadable_file_is_named_and_the_other_entries_still_checked(tmp_path: Path,
                                                                                         kb: Path) -> None:
    cursor = tmp_path / "home" / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text('{\n  // mine\n  "mcpServers": {}\n}\n', encoding="utf-8")  # Cursor's is plain JSON
    client_file(tmp_path, "claude-code", {"type": "stdio", "command": SERVER, "args": ["--config", str(kb)]})
    done = doctor(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Claude Code (user) ") and "  ok: MCP handshake in " in done.stdout
    assert done.stderr == (f"not read: {cursor} is not valid JSON: Expecting property name enclosed in double quotes "
                           "at line 2, column 3\n")
    asked = doctor(tmp_path, "cursor")  # asked for by name, its file's error is the answer
    assert asked.returncode == 1 and asked.stderr.startswith(f"error: {cursor} is not valid JSON")
