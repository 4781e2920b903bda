"""Whose yes a write of an agent run needs (issue 55): pre-approval is a power of the user's own config,
never of an agent file that came with a registry or a cloned project; a server that serves one agent
runs only agents whose tools fit inside its own; the budget holds inside one reply.

Each case was first seen to fail: a registry agent and a project ``.ctx/agents/`` file with
``approve: writes`` deleted a note with no one asked; a server scoped to ``reader`` (search, agent_run)
ran ``cleaner`` and deleted; one reply of 3,000 calls ran for minutes under ``--max-seconds 5``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from context_harness import config as config_mod
from context_harness.core.face import RunRequest
from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from context_harness.store.records import document_id
from support.agent_runs import ctx, no_traceback, run_workspace, steps_of, synced
from support.chat_server import ScriptedChat, message, tool_calls
from support.registries import make_registry

DOOMED = {"id": document_id("filesystem:notes", "doomed.md")}
CLEANER = ("---\nname: cleaner\ndescription: Deletes what it is told to\ntools: note_delete\napprove: writes\n---\n"
           "You delete notes.\n")


def doomed(root: Path) -> Path:
    path = root / "notes" / "doomed.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Doomed\n\nKeep me.\n", encoding="utf-8")
    return path


def project_workspace(root: Path, url: str, extra: str = "") -> Path:
    """``run_workspace`` laid out as ``ctx init`` makes it in a cloned project: the config in ``.ctx/``
    and the clone's own agent file ``.ctx/agents/cleaner.md`` beside it."""
    plain = run_workspace(root, url, extra=extra)
    folder = root / ".ctx"
    (folder / "agents").mkdir(parents=True)
    (folder / "agents" / "cleaner.md").write_text(CLEANER, encoding="utf-8")
    text = plain.read_text(encoding="utf-8").replace('path = "data/ctx.sqlite"', 'path = "../data/ctx.sqlite"')
    (folder / "config.toml").write_text(text.replace('root = "notes"', 'root = "../notes"'), encoding="utf-8")
    plain.unlink()
    return folder / "config.toml"


@pytest.mark.anyio
async def test_a_project_agent_file_cannot_approve_its_own_writes(tmp_path: Path) -> None:
    note = doomed(tmp_path)
    with ScriptedChat([tool_calls([("note_delete", DOOMED)]), message("Deleted.")], model="local") as chat:
        config = project_workspace(tmp_path, chat.url)
        async with Harness.open(config_mod.load(config)) as harness:
            await harness.sync()
            record = await harness.run_agent(RunRequest(agent="cleaner", task="Delete doomed.md"))
    assert note.is_file(), "an agent file approved its own delete"
    [approval] = steps_of(record, "approval")
    assert approval["approved"] is False and approval["by"] == "no one could be asked"
    [asked] = [s["text"] for s in steps_of(record, "note") if "asks that its writes" in s["text"]]
    assert "only your own config can grant that" in asked and "[agents] approve_writes" in asked
    fed = json.loads(chat.requests[1]["messages"][-1]["content"])["error"]["message"]
    assert "note_delete is destructive and was not approved" in fed and "approve_writes" in fed


@pytest.mark.anyio
async def test_the_users_config_grants_it_and_the_record_says_whose_decision(tmp_path: Path) -> None:
    note = doomed(tmp_path)
    with ScriptedChat([tool_calls([("note_delete", DOOMED)]), message("Deleted.")], model="local") as chat:
        config = project_workspace(tmp_path, chat.url, extra='\n[agents]\napprove_writes = ["cleaner"]\n')
        async with Harness.open(config_mod.load(config)) as harness:
            await harness.sync()
            record = await harness.run_agent(RunRequest(agent="cleaner", task="Delete doomed.md"))
    assert not note.exists()
    [approval] = steps_of(record, "approval")
    assert approval["approved"] is True
    assert approval["by"] == f"your config ([agents] approve_writes in {config})"
    assert approval["request"] and len(approval["digest"]) == 64


def test_a_registry_agent_asks_and_its_listing_says_so(tmp_path: Path) -> None:
    """The issue's first case, through the CLI as a user meets it: a registry's agent that says
    ``approve: writes`` ran a delete with no terminal and no --yes, and `ctx registry list` called it
    "pure … on"."""
    manifest = '[extensions."agents/cleaner"]\nkind = "agent"\npath = "agents/cleaner.md"\ndescription = "tidies"\n'
    make_registry(tmp_path / "reg", manifest, {"agents/cleaner.md": CLEANER})
    note = doomed(tmp_path / "kb")
    with ScriptedChat([tool_calls([("note_delete", DOOMED)]), message("Deleted.")], model="local") as chat:
        config = run_workspace(tmp_path / "kb", chat.url)
        text = config.read_text(encoding="utf-8")
        config.write_text(text + '\n[registries.community]\nurl = "../reg"\ntier = "community"\n', encoding="utf-8")
        synced(tmp_path / "kb")
        listed = ctx("registry", "list", cwd=tmp_path / "kb")
        no_traceback(listed)
        assert "agents/cleaner" in listed.stdout
        assert "asks to write without asking: not granted" in listed.stdout, listed.stdout
        done = ctx("agent", "run", "cleaner", "Delete doomed.md", "--json", cwd=tmp_path / "kb")
    no_traceback(done)
    assert note.is_file(), "a registry agent approved its own delete"
    record = json.loads(done.stdout)
    [approval] = steps_of(record, "approval")
    assert approval["approved"] is False


READER = """
[agents.reader]
description = "Reads, and may start runs"
tools = ["search", "agent_run"]
system_prompt = "You read."

[agents.cleaner]
description = "Deletes"
tools = ["note_delete"]
system_prompt = "You delete."
approve = "writes"

[agents.looker]
description = "Only searches"
tools = ["search"]
system_prompt = "You look."
"""


@pytest.mark.anyio
async def test_a_scoped_server_runs_only_agents_inside_its_scope(tmp_path: Path) -> None:
    note = doomed(tmp_path)
    with ScriptedChat([message("Looked.")], model="local") as chat:
        config = run_workspace(tmp_path, chat.url, extra=READER)
        async with Harness.open(config_mod.load(config)) as harness, \
                Client(build_server(harness, agent="reader")) as client:
            await harness.sync()
            with pytest.raises(MCPError) as refused:
                await client.call_tool("agent_run", {"agent": "cleaner", "task": "Delete doomed.md"})
            allowed = await client.call_tool("agent_run", {"agent": "looker", "task": "Look"})
    assert "agent 'cleaner' uses tools outside this server's scope (note_delete)" in str(refused.value)
    assert note.is_file()
    assert not allowed.is_error and allowed.structured_content is not None
    assert allowed.structured_content["status"] == "finished"
    assert len(chat.requests) == 1, "the refused run never reached the model"


@pytest.mark.anyio
async def test_one_reply_of_thousands_of_calls_stays_within_its_budget(tmp_path: Path) -> None:
    """3,000 calls in one reply: at most CALLS_PER_REPLY run, every call id gets an answer, and the
    run is done within seconds (before: 148 s under max_seconds 5)."""
    calls = [("search", {"query": f"permit {i}"}) for i in range(3000)]
    with ScriptedChat([tool_calls(calls), message("Done.")], model="local") as chat:
        config = run_workspace(tmp_path, chat.url)
        async with Harness.open(config_mod.load(config)) as harness:
            began = time.monotonic()
            record = await harness.run_agent(RunRequest(agent="filer", task="Search", max_seconds=5))
            took = time.monotonic() - began
    assert record["status"] == "finished", record["reason"]
    outcomes = [s["outcome"] for s in steps_of(record, "tool")]
    assert outcomes.count("ok") == 32 and outcomes.count("refused") == 3000 - 32
    fed = [m for m in chat.requests[1]["messages"] if m["role"] == "tool"]
    assert len(fed) == 3000 and "at most 32 tool calls" in fed[-1]["content"]
    assert took < 25, f"{took:.1f} s"  # 3.1 s on the 2-core machine under load (148 s before)
    [model_step, _] = steps_of(record, "model")
    assert model_step["calls_asked"] == 3000 and len(model_step["calls"]) == 32


SLOW_LUA = """
tool = { description = "Takes a second and a half", parameters = { { name = "n", type = "number" } },
         annotations = { readOnlyHint = true } }
function tool.execute(params, context)
  sleep(1.5)
  return { n = params.n }
end
"""


@pytest.mark.anyio
async def test_the_time_budget_is_checked_before_every_call(tmp_path: Path) -> None:
    """20 calls of a 1.5 s tool in one reply under max_seconds 4 (before: 34 s): the run ends within a
    second or so of its budget, as a budget end."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "slow.lua").write_text(SLOW_LUA, encoding="utf-8")
    calls = [("slow", {"n": i}) for i in range(20)]
    with ScriptedChat([tool_calls(calls), message("never")], model="local") as chat:
        config = run_workspace(tmp_path, chat.url, extra="""
            [tools.script.slow]
            path = "tools/slow.lua"

            [agents.waiter]
            description = "Waits"
            tools = ["slow"]
            system_prompt = "You wait."
            """)
        async with Harness.open(config_mod.load(config)) as harness:
            began = time.monotonic()
            record = await harness.run_agent(RunRequest(agent="waiter", task="Wait", max_seconds=4))
            took = time.monotonic() - began
    assert record["status"] == "budget" and "max_seconds (4 s) reached" in record["reason"]
    assert took < 4 + 1.5 * 5, f"{took:.1f} s"
    assert len(steps_of(record, "tool")) <= 4
    assert len(chat.requests) == 1


@pytest.mark.anyio
async def test_an_endpoint_that_reports_no_tokens_is_charged_an_estimate(tmp_path: Path) -> None:
    big = "x" * 40_000
    nothing = {"prompt_tokens": 0, "completion_tokens": 0}
    script = [tool_calls([("search", {"query": f"{big} {i}"})], usage=nothing) for i in range(10)]
    with ScriptedChat([*script, message("Done.", usage=nothing)], model="local") as chat:
        config = run_workspace(tmp_path, chat.url, model_keys="max_run_tokens = 30000\n")
        async with Harness.open(config_mod.load(config)) as harness:
            record = await harness.run_agent(RunRequest(agent="filer", task="Search"))
    assert record["status"] == "budget" and "max tokens (30,000) reached" in record["reason"], record["reason"]
    model_steps = steps_of(record, "model")
    assert model_steps[0]["tokens"]["estimated"] is True and model_steps[0]["tokens"]["completion"] >= 10_000
    assert len(model_steps) < 10
    assert len(chat.requests) < 10
