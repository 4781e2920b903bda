"""``ctx agent list|test|init``: in process (click's runner) for the default suite, and as a user
runs them (subprocess, slow) — including the shipped ``agents/`` against the bundled sample docs."""

from __future__ import annotations

import json
import os
import shutil
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_harness.cli import cli
from context_harness.sample import DOCS
from support.cli import run_ctx
from support.paths import REPO


def run(*args: str, cwd: Path) -> tuple[int, str, str]:
    runner = CliRunner()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = runner.invoke(cli, list(args), catch_exceptions=False, env={"CTX_CONFIG": None})
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


ctx = partial(run_ctx, timeout=120)


def test_agents_cli_list(served_config: Path) -> None:
    code, out, _ = run("agent", "list", "--json", cwd=served_config.parent)
    assert code == 0
    agents = json.loads(out)["agents"]  # exactly GET /agents/list
    assert [(a["name"], a["source"]) for a in agents] == [
        ("debugger", "markdown"), ("responder", "lua"), ("reviewer", "toml")]
    assert agents[2]["arguments"] == [{"name": "language", "description": "Language", "required": True}]
    code, out, _ = run("agent", "list", cwd=served_config.parent)
    assert "responder  [lua]  tools: search, get" in out and "arguments: service*, mode" in out


def test_agents_cli_test_reports_counts(served_config: Path) -> None:
    root = served_config.parent
    assert run("sync", "--progress", "none", cwd=root)[0] == 0
    code, out, _ = run("agent", "test", "responder", "--arg", "service=search", "--json", cwd=root)
    assert code == 0
    payload = json.loads(out)
    assert payload["source"] == "lua" and payload["tools"] == ["search", "get"]
    assert payload["searches"] == 2 and payload["fetches"] == 1
    assert payload["system"] == "Incident on search. Runbook: Runbook: search down"
    assert payload["messages"] == [{"role": "user", "content": "Found 2 documents."}]
    assert payload["resolve_ms"] >= 0

    code, out, _ = run("agent", "test", "reviewer", "--arg", "language=go", cwd=root)
    assert code == 0
    assert out.startswith("agent: reviewer (toml)\ntools: search\nresolved in ")
    assert "0 searches, 0 fetches" in out
    assert "--- system prompt ---\nYou review go code." in out


@pytest.mark.parametrize(("args", "fragment"), [
    (("agent", "test", "nobody"), "unknown agent 'nobody'"),
    (("agent", "test", "reviewer"), "missing required argument 'language'"),
    (("agent", "test", "reviewer", "--arg", "language"), "expected KEY=VALUE"),
    (("agent", "test", "responder", "--arg", "service=x", "--arg", "mode=spin"), "timed out"),
    (("agent", "init", "bad name"), "agent names must match"),
])
def test_agents_cli_errors(served_config: Path, args: tuple[str, ...], fragment: str) -> None:
    code, out, err = run(*args, cwd=served_config.parent)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and fragment in err and "Traceback" not in err


def test_agents_cli_init_templates_resolve(served_config: Path) -> None:
    root = served_config.parent
    code, out, _ = run("agent", "init", "helper", cwd=root)
    assert code == 0 and (root / "agents" / "helper.md").is_file()
    assert "found automatically" in out
    code, out, _ = run("agent", "init", "scout", "--lua", cwd=root)
    assert code == 0 and "[agents.script.scout]\npath = \"agents/scout.lua\"" in out
    with served_config.open("a", encoding="utf-8") as config:
        config.write('\n[agents.script.scout]\npath = "agents/scout.lua"\ntimeout = 10\n')
    code, out, _ = run("agent", "init", "notes", "--markdown", "--path", "more/notes.md", cwd=root)
    assert code == 0 and (root / "more" / "notes.md").is_file()

    assert run("sync", "--progress", "none", cwd=root)[0] == 0
    code, out, _ = run("agent", "test", "helper", "--json", cwd=root)
    assert code == 0 and json.loads(out)["tools"] == ["search", "get", "sources"]
    code, out, _ = run("agent", "test", "scout", "--arg", "topic=runbook", "--json", cwd=root)
    assert code == 0
    scout = json.loads(out)
    assert scout["searches"] == 1 and "Runbook: search down" in scout["system"]
    assert scout["messages"] == [{"role": "user", "content": "Let's work on runbook."}]

    before = (root / "agents" / "helper.md").read_text()
    code, _, err = run("agent", "init", "helper", cwd=root)
    assert code == 1 and "already exists; not overwriting" in err
    assert (root / "agents" / "helper.md").read_text() == before


def shipped_workspace(tmp_path: Path) -> Path:
    """The shipped agents/ folder beside a ctx.toml over the bundled sample docs (as the docs say)."""
    shutil.copytree(REPO / "agents", tmp_path / "agents")
    agents_toml = (REPO / "agents" / "agents.toml").read_text(encoding="utf-8")
    (tmp_path / "ctx.toml").write_text(
        f'[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "disabled"\n\n'
        f'[connectors.filesystem.sample]\nroot = "{DOCS.as_posix()}"\n\n{agents_toml}', encoding="utf-8")
    return tmp_path


@pytest.mark.slow
def test_agents_cli_shipped_agents_over_the_sample(tmp_path: Path) -> None:
    root = shipped_workspace(tmp_path)
    synced = ctx("sync", "--progress", "none", cwd=root)
    assert synced.returncode == 0, synced.stderr
    listed = ctx("agent", "list", "--json", cwd=root)
    assert listed.returncode == 0, listed.stderr
    assert {(a["name"], a["source"]) for a in json.loads(listed.stdout)["agents"]} == {
        ("architect", "toml"), ("code-reviewer", "toml"), ("incident-responder", "lua"),
        ("onboarding", "markdown"), ("writer", "markdown")}
    tested = ctx("agent", "test", "incident-responder", "--arg", "service=search", "--arg", "severity=sev1", cwd=root)
    assert tested.returncode == 0, tested.stderr
    out = tested.stdout
    assert out.startswith("agent: incident-responder (lua)\ntools: search, get\nresolved in ")
    assert "2 searches, 1 fetch\n" in out
    assert "sev1 incident affecting 'search'" in out and "### incident-triage" in out
    assert "--- message 1 (user) ---" in out
    missing = ctx("agent", "test", "incident-responder", cwd=root)
    assert missing.returncode == 1 and "missing required argument 'service'" in missing.stderr
