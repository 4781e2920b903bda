"""The records of ``ctx agent run`` and what a user can get wrong, against the scripted chat server and the
real CLI in a subprocess: ``ctx agent runs [--json]`` and ``ctx agent show RUN`` (prefix ids, ambiguous and
unknown ones) on SQLite and PostgreSQL; an API key sent as a Bearer token and never recorded (nor a key
in the task, the model's calls, a tool's result or the answer); the config errors, each one line and exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from context_harness import config as config_mod
from context_harness.core.face import RunRequest
from context_harness.core.harness import Harness
from support.agent_runs import FULL_SCRIPT, TASK, ctx, no_traceback, run_workspace, steps_of
from support.chat_server import ScriptedChat, message, tool_calls
from support.paths import EXAMPLES


@pytest.mark.parametrize("backend", ["embedded", "postgres"])
def test_runs_and_show(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    db = ""
    if backend == "postgres":
        db = f'backend = "postgres"\nurl = "{request.getfixturevalue("pg_url")}"'
    import anyio

    async def in_process(config: Path, request: RunRequest | None = None) -> Any:
        async with Harness.open(config_mod.load(config)) as harness:
            if request is None:
                await harness.sync()
                return await harness.agent_runs(agent="nobody")
            return await harness.run_agent(request)

    with ScriptedChat([*FULL_SCRIPT, message("Nothing to file.")], model="local") as chat:
        config = run_workspace(tmp_path, chat.url, db=db)
        empty = ctx("agent", "runs", cwd=tmp_path)
        assert empty.returncode == 0 and empty.stdout.strip().startswith("No agent runs yet"), empty.stderr
        assert anyio.run(in_process, config) == []
        first = ctx("agent", "run", "filer", TASK, "--yes", "-q", cwd=tmp_path)
        assert first.returncode == 0 and first.stderr == "", "-q: no step lines"
        time.sleep(1.01 - time.time() % 1)  # the next second: records are ordered by their start, to the second
        second = anyio.run(in_process, config, RunRequest(agent="filer", task="Anything new?"))
    assert second["status"] == "finished"
    assert (tmp_path / "notes" / "projects" / "meeting.md").is_file()

    listed = ctx("agent", "runs", "--agent", "filer", "--json", cwd=tmp_path)
    runs = json.loads(listed.stdout)["runs"]
    assert [r["task"] for r in runs] == ["Anything new?", TASK], "newest first"
    assert [r["step_count"] for r in runs] == [3, 10] and all("steps" not in r for r in runs)
    assert {r["status"] for r in runs} == {"finished"}

    lines = ctx("agent", "runs", cwd=tmp_path).stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(runs[0]["id"]) and "  filer  finished  3 steps  " in lines[0]
    assert lines[1].endswith(TASK)

    ids = [r["id"] for r in runs]
    unique = next(n for n in range(1, len(ids[1]) + 1) if not ids[0].startswith(ids[1][:n]))
    shown = ctx("agent", "show", ids[1][:unique], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert text.startswith(f"run {ids[1]}: agent filer, model local, started {runs[1]['started_at']}\ntask: {TASK}\n")
    assert '→ search {"query": "shed permit"}' in text and "  note_write: approved by the run's start (--yes, or the console's approve-every-write box)" in text
    assert "= finished: the model gave its answer" in text
    assert text.rstrip().endswith("--- answer ---\nFiled it under projects/meeting.md.")
    whole = json.loads(ctx("agent", "show", ids[1], "--json", cwd=tmp_path).stdout)
    assert whole["id"] == ids[1] and len(whole["steps"]) == 10 and whole["steps"][-1]["kind"] == "end"

    common = os.path.commonprefix(ids)
    ambiguous = ctx("agent", "show", common, cwd=tmp_path)
    assert ambiguous.returncode == 1 and "is ambiguous" in ambiguous.stderr and ids[0] in ambiguous.stderr
    unknown = ctx("agent", "show", "r1999", cwd=tmp_path)
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == "error: no run 'r1999'; `ctx agent runs` lists them"
    for done in (ambiguous, unknown):
        no_traceback(done)


# -- secrets ---------------------------------------------------------------------------------------------

SECRET = "sk-test-7f3a9c2e1b44d0"


def test_the_api_key_is_sent_and_never_recorded(tmp_path: Path) -> None:
    script = [tool_calls([("echo", {"text": f"the key is {SECRET}"})]), message(f"Your key: {SECRET}.")]
    env = {"CTX_TEST_MODEL_KEY": SECRET}
    with ScriptedChat(script, model="local") as chat:
        config = run_workspace(tmp_path, chat.url, extra=f"""
            [tools.script.echo]
            path = "{(EXAMPLES / 'lua' / 'echo.lua').as_posix()}"

            [agents.echoer]
            description = "Echoes"
            tools = ["echo"]
            system_prompt = "You echo."
            """)
        text = config.read_text(encoding="utf-8")
        config.write_text(text.replace('model = "local"\n', 'model = "local"\napi_key = "${CTX_TEST_MODEL_KEY}"\n', 1),
                          encoding="utf-8")
        done = ctx("agent", "run", "echoer", f"Echo the key {SECRET}", "--json", cwd=tmp_path, env=env)
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert [h["authorization"] for h in chat.headers] == [f"Bearer {SECRET}"] * 2
    assert SECRET in chat.requests[1]["messages"][-1]["content"], "the tool's result reached the model whole"
    assert chat.requests[0]["messages"][-1] == {"role": "user", "content": f"Echo the key {SECRET}"}
    record = json.loads(done.stdout)
    assert record["answer"] == "Your key: ***." and record["task"] == "Echo the key ***"
    [tool] = steps_of(record, "tool")
    assert tool["outcome"] == "ok" and "the key is ***" in tool["result"]
    shown = ctx("agent", "show", record["id"], "--json", cwd=tmp_path, env=env)
    plain = ctx("agent", "show", record["id"], cwd=tmp_path, env=env)
    for output in (done.stdout, done.stderr, shown.stdout, plain.stdout):
        assert SECRET not in output
    assert "***" in shown.stdout
    stored = b"".join(p.read_bytes() for p in (tmp_path / "data").rglob("*") if p.is_file())
    assert SECRET.encode() not in stored, "the key is in the workspace's files"
    assert "the key is" in stored.decode("utf-8", "replace"), "the record was saved where the test looked"


# -- config errors: one line, exit 1 -----------------------------------------------------------------

NO_MODEL_AGENT = """
[agents.big]
description = "Wants a big model"
tools = ["search"]
system_prompt = "You think hard."
model = "big"
"""
UNSET_KEY = """
[models.hosted]
url = "https://api.example.invalid/v1"
model = "gpt-x"
api_key = "${CTX_TEST_UNSET_KEY}"
"""
OTHER_MODEL = """
[models.other]
url = "http://127.0.0.1:9/v1"
model = "other"
"""


@pytest.mark.parametrize(("extra", "args", "expected"), [
    ("", ["filer", TASK, "--model", "nosuch"],
     "error: the run names model 'nosuch', which is not configured; add a [models.nosuch] table with url and model "
     "(configured: local)"),
    (NO_MODEL_AGENT, ["big", TASK],
     "error: agent 'big' ([agents.big] in {config}) names model 'big', which is not configured; add a [models.big] table "
     "with url and model (configured: local)"),
    (OTHER_MODEL, ["filer", TASK],
     "error: several models are configured (local, other): name one with --model, in the agent's model key, or call "
     "one of them [models.default]"),
    (UNSET_KEY, ["filer", TASK, "--model", "hosted"], "CTX_TEST_UNSET_KEY"),
    ("", ["filter", TASK], "filer"),
    ("", ["filer", "  "], "error: the task is empty: say what the agent should do"),
    ("", ["filer", TASK, "--arg", "nope=1"], "error: agent 'filer': unknown argument 'nope' (expected: no arguments)"),
], ids=["unknown-model", "agent-names-missing-model", "several-models", "unset-variable", "unknown-agent",
        "empty-task", "unknown-argument"])
def test_config_errors_are_one_line(tmp_path: Path, extra: str, args: list[str], expected: str) -> None:
    run_workspace(tmp_path, "http://127.0.0.1:9/v1", extra=extra)
    environment = {k: v for k, v in os.environ.items() if k != "CTX_TEST_UNSET_KEY"}
    done = subprocess.run([sys.executable, "-m", "context_harness", "agent", "run", *args], cwd=tmp_path,
                          env={**environment, "NO_COLOR": "1"}, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    no_traceback(done)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    if expected.startswith("error: "):
        assert lines[0] == expected.replace("{config}", str(tmp_path / "ctx.toml"))
    else:
        assert expected in lines[0]
    assert done.stdout == ""
    assert not (tmp_path / "data").exists() or json.loads(ctx("agent", "runs", "--json", cwd=tmp_path).stdout) == {
        "runs": []}, "nothing ran"


def test_no_model_configured(tmp_path: Path) -> None:
    config = run_workspace(tmp_path, None)
    assert "[models" not in config.read_text(encoding="utf-8")
    done = ctx("agent", "run", "filer", TASK, cwd=tmp_path)
    no_traceback(done)
    assert done.returncode == 1
    assert done.stderr.startswith("error: no chat model is configured: add a [models.NAME] table (url, model) to ")
    assert "docs/how-to/agents.md" in done.stderr and len(done.stderr.strip().splitlines()) == 1
