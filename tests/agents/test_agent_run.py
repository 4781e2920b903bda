"""``ctx agent run`` against the scripted OpenAI-compatible chat server (``support.chat_server``), as a user
runs it: the real CLI in a subprocess (no terminal unless a test gives it one) over a workspace with a
writable folder, and the core's ``Harness.run_agent`` where a test looks inside the loop.

What the model is sent (the agent's resolved prompt as system message: arguments, skills, a Lua
agent's injected context; the task; the tools with their real JSON Schemas; each tool result under its
call's id), what a run writes with ``--yes`` and without it (refused, reported to the model, the run
goes on), approvals by ``approve = "writes"``, a person at a real pty (y / n / always, Ctrl-C at the
prompt) and read-only tools; Ctrl-C and SIGTERM (recorded as stopped, exit 130) and a killed process
(shown as interrupted)
(``test_agent_run_records.py``: the records, secrets and config errors)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from context_harness import config as config_mod
from context_harness.core.face import RunRequest
from context_harness.core.harness import Harness
from support.agent_runs import (
    FILER_PROMPT,
    FULL_SCRIPT,
    NOTE,
    PERMIT_ID,
    TASK,
    ctx,
    no_traceback,
    run_workspace,
    steps_of,
    synced,
)
from support.chat_server import ScriptedChat, delay, message, tool_calls
from support.paths import EXAMPLES

# -- a whole run through the CLI ---------------------------------------------------------------------

def test_run_searches_reads_and_writes_with_yes(tmp_path: Path) -> None:
    with ScriptedChat(FULL_SCRIPT, model="local") as chat:
        run_workspace(tmp_path, chat.url)
        synced(tmp_path)
        done = ctx("agent", "run", "filer", TASK, "--yes", "--json", cwd=tmp_path)
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (record["status"], record["reason"]) == ("finished", "the model gave its answer")
    assert record["answer"] == "Filed it under projects/meeting.md." and record["model"] == "local"
    written = tmp_path / "notes" / "projects" / "meeting.md"
    assert NOTE["content"] in written.read_text(encoding="utf-8")
    found = ctx("search", "quokka", "--json", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert [r["source_id"] for r in json.loads(found.stdout)["results"]] == ["projects/meeting.md"]

    # the stream on stderr: the tools, each call and its outcome, the approval, the end
    assert "· tools: search, get, note_write" in done.stderr
    assert '→ note_write {"source": "filesystem:notes"' in done.stderr
    assert "note_write: approved by the run's start (--yes, or the console's approve-every-write box)" in done.stderr and "= finished: the model gave its answer" in done.stderr

    # what the model was sent: the agent's prompt, the task, the real schemas, each result under its call's id
    assert len(chat.requests) == 4
    first = chat.requests[0]
    assert first["model"] == "local" and first["stream"] is False
    assert first["messages"] == [{"role": "system", "content": FILER_PROMPT}, {"role": "user", "content": TASK}]
    schemas = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert list(schemas) == ["search", "get", "note_write"]
    assert all(t["type"] == "function" for t in first["tools"])
    real = tool_schemas(tmp_path / "ctx.toml", list(schemas))
    for name, function in schemas.items():
        assert function["parameters"] == real[name]["parameters"], name
        assert function["description"] == real[name]["description"], name
    assert schemas["note_write"]["parameters"]["required"] == ["source", "path", "content"]
    fed = [r["messages"][-1] for r in chat.requests[1:]]
    assert [(m["role"], m["tool_call_id"]) for m in fed] == [("tool", "call_1"), ("tool", "call_2"), ("tool", "call_3")]
    assert fed[0]["content"].startswith("1 result:") and PERMIT_ID in fed[0]["content"]
    assert "site plan and the council form" in fed[1]["content"]
    assert fed[2]["content"].startswith("Written projects/meeting.md in filesystem:notes")
    assistant = chat.requests[1]["messages"][-2]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"] == [{"id": "call_1", "type": "function", "function": {
        "name": "search", "arguments": '{"query": "shed permit"}'}}]
    assert chat.requests[3]["messages"][:2] == first["messages"], "the conversation grows; its start stays"

    # the record: every step, and the steps of the write
    kinds = [s["kind"] for s in record["steps"]]
    assert kinds == ["start", "model", "tool", "model", "tool", "model", "approval", "tool", "model", "end"]
    [approval] = steps_of(record, "approval")
    assert (approval["tool"], approval["approved"], approval["by"], approval["call"]) == ("note_write", True, "the run's start (--yes, or the console's approve-every-write box)",
                                                                                          "call_3")
    assert [s["outcome"] for s in steps_of(record, "tool")] == ["ok", "ok", "ok"]
    assert record["tokens"]["prompt"] > 0 and record["tokens"]["completion"] > 0


def tool_schemas(config_path: Path, names: list[str]) -> dict[str, dict[str, Any]]:
    """The tools' descriptions and input schemas as the server itself builds them."""
    import anyio

    async def read() -> dict[str, dict[str, Any]]:
        async with Harness.open(config_mod.load(config_path)) as harness:
            tools = {t.name: t for t in harness.tools()}
            return {n: {"parameters": tools[n].input_schema, "description": tools[n].description} for n in names}

    return anyio.run(read)


REVIEWER = """
[agents.reviewer]
description = "Reviews notes"
tools = ["search", "get"]
system_prompt = "You review {{topic}} notes."
arguments = [{ name = "topic", description = "What to review", required = true }]
skills = ["checklist"]

[agents.script.briefer]
path = "agents/briefer.lua"
"""
BRIEFER = """
agent = { name = "briefer", description = "Briefs with the permit note", tools = {"search"} }
function agent.resolve(args, config, context)
  local hits = context.search({query = "shed permit", limit = 1})
  return {system = "You brief.", messages = {{role = "user", content = "Context: " .. hits[1].title}}}
end
return agent
"""
SUBAGENT = """---
name: helper
description: A Claude Code subagent
tools: Read, Grep, search
model: sonnet
---
You help with the knowledge base.
"""


@pytest.mark.parametrize(("agent", "args"), [("reviewer", ["--arg", "topic=garden"]), ("briefer", []),
                                             ("helper", [])])
def test_the_system_message_is_the_agents_resolved_prompt(tmp_path: Path, agent: str, args: list[str]) -> None:
    """Arguments, skills and injected context (a Lua agent's messages) reach the model as a client
    gets them; a Claude Code subagent's own tools are not offered and its model: sonnet is noted."""
    (tmp_path / "skills" / "checklist").mkdir(parents=True)
    (tmp_path / "skills" / "checklist" / "SKILL.md").write_text(
        "---\nname: checklist\ndescription: What to check\n---\nCheck the permit number first.\n", encoding="utf-8")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "briefer.lua").write_text(BRIEFER, encoding="utf-8")
    (tmp_path / "agents" / "helper.md").write_text(SUBAGENT, encoding="utf-8")
    with ScriptedChat([message("Reviewed.")], model="local") as chat:
        config = run_workspace(tmp_path, chat.url, extra=REVIEWER)
        synced(tmp_path)
        done = ctx("agent", "run", agent, "Go", *args, "--json", cwd=tmp_path)
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    import anyio

    async def resolved() -> Any:
        async with Harness.open(config_mod.load(config)) as harness:
            return (await harness.resolve_agent(agent, dict(a.split("=", 1) for a in args[1::2]))).prompt

    prompt = anyio.run(resolved)
    sent = chat.requests[0]["messages"]
    assert sent[0] == {"role": "system", "content": prompt.system}
    assert sent[1:-1] == [{"role": m.role, "content": m.content} for m in prompt.messages]
    assert sent[-1] == {"role": "user", "content": "Go"}
    offered = [t["function"]["name"] for t in chat.requests[0].get("tools", [])]
    [start] = steps_of(record, "start")
    assert start["tools"] == offered
    if agent == "reviewer":
        assert sent[0]["content"].startswith("You review garden notes.")
        assert "Check the permit number first." in sent[0]["content"]
        assert record["arguments"] == {"topic": "garden"} and offered == ["search", "get"]
    elif agent == "briefer":
        assert sent[1] == {"role": "user", "content": "Context: Shed permit"} and offered == ["search"]
    else:
        assert offered == ["search"] and start["not_offered"] == ["Read", "Grep"]
        assert "· tools: search (not offered: Read, Grep)" in done.stderr
        [note] = steps_of(record, "note")
        assert note["text"] == "the agent asks for Claude Code's model 'sonnet'; this run uses the default model"


def test_without_yes_and_without_a_terminal_the_write_is_refused(tmp_path: Path) -> None:
    with ScriptedChat(FULL_SCRIPT, model="local") as chat:
        run_workspace(tmp_path, chat.url)
        synced(tmp_path)
        done = ctx("agent", "run", "filer", TASK, cwd=tmp_path)
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Filed it under projects/meeting.md."
    assert not (tmp_path / "notes" / "projects").exists(), "nothing writes without an approval"
    assert "note_write: not approved (no one could be asked)" in done.stderr
    refusal = chat.requests[3]["messages"][-1]
    assert refusal["role"] == "tool" and refusal["tool_call_id"] == "call_3"
    error = json.loads(refusal["content"])["error"]
    assert error["code"] == "refused"
    assert "note_write writes and was not approved" in error["message"] and "--yes" in error["message"]

    runs = json.loads(ctx("agent", "runs", "--json", cwd=tmp_path).stdout)["runs"]
    [run] = runs
    record = json.loads(ctx("agent", "show", run["id"], "--json", cwd=tmp_path).stdout)
    assert record["status"] == "finished"
    [approval] = steps_of(record, "approval")
    assert approval["approved"] is False and approval["by"] == "no one could be asked"
    assert [s["outcome"] for s in steps_of(record, "tool")] == ["ok", "ok", "refused"]


@pytest.mark.anyio
async def test_approve_writes_on_the_agent_lets_it_write(tmp_path: Path) -> None:
    with ScriptedChat([tool_calls([("note_write", NOTE)]), message("Done.")], model="local") as chat:
        config = run_workspace(tmp_path, chat.url, extra="""
            [agents.trusted]
            description = "Writes without asking"
            tools = ["note_write"]
            system_prompt = "You write notes."
            approve = "writes"
            """)
        async with Harness.open(config_mod.load(config)) as harness:
            record = await harness.run_agent(RunRequest(agent="trusted", task="Write it"))
    assert record["status"] == "finished"
    [approval] = steps_of(record, "approval")
    assert approval["approved"] is True and approval["by"].startswith('your config (approve = "writes" in [agents.trusted] in ')
    assert (tmp_path / "notes" / "projects" / "meeting.md").is_file()


STAMP_LUA = """
tool = {
  description = "Returns a stamp (declares nothing, so it counts as a write)",
  parameters = { { name = "text", type = "string", required = true } },
}
function tool.execute(params, context)
  return { stamped = params.text }
end
"""


@pytest.mark.anyio
async def test_read_only_tools_need_no_approval_and_undeclared_lua_tools_do(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "stamp.lua").write_text(STAMP_LUA, encoding="utf-8")
    script = [tool_calls([("echo", {"text": "hello"}), ("stamp", {"text": "hi"}), ("search", {"query": "permit"})]),
              message("Done.")]
    with ScriptedChat(script, model="local") as chat:
        config = run_workspace(tmp_path, chat.url, extra=f"""
            [tools.script.echo]
            path = "{(EXAMPLES / 'lua' / 'echo.lua').as_posix()}"

            [tools.script.stamp]
            path = "tools/stamp.lua"

            [agents.lua-user]
            description = "Uses Lua tools"
            tools = ["echo", "stamp", "search"]
            system_prompt = "You use tools."
            """)
        async with Harness.open(config_mod.load(config)) as harness:
            await harness.sync()
            record = await harness.run_agent(RunRequest(agent="lua-user", task="Use them"))
    assert record["status"] == "finished"
    assert [(s["tool"], s["approved"]) for s in steps_of(record, "approval")] == [("stamp", False)]
    outcomes = {s["tool"]: s["outcome"] for s in steps_of(record, "tool")}
    assert outcomes == {"echo": "ok", "stamp": "refused", "search": "ok"}
    fed = {m["tool_call_id"]: m["content"] for m in chat.requests[1]["messages"] if m["role"] == "tool"}
    assert "hello" in fed["call_1"] and "stamp writes and was not approved" in fed["call_2"]


@pytest.mark.anyio
async def test_a_person_answers_each_write(tmp_path: Path) -> None:
    """The approver (a person at a terminal, or the console's page) says no, then always: the second
    write is asked, the third is not."""
    second = {**NOTE, "path": "projects/second.md"}
    third = {**NOTE, "path": "projects/third.md"}
    script = [tool_calls([("note_write", NOTE)]), tool_calls([("note_write", second)]),
              tool_calls([("note_write", third)]), message("Done.")]
    asked: list[Any] = []
    answers = iter(["no", "always"])

    async def person(approval: Any) -> str:
        asked.append(approval)
        return next(answers)

    with ScriptedChat(script, model="local") as chat:
        config = run_workspace(tmp_path, chat.url)
        async with Harness.open(config_mod.load(config)) as harness:
            record = await harness.run_agent(RunRequest(agent="filer", task="Write three"), approver=person)
    assert [(a.tool, a.arguments["path"], a.why) for a in asked] == [("note_write", "projects/meeting.md", "writes"),
                                                                    ("note_write", "projects/second.md", "writes")]
    approvals = [(s["approved"], s["by"]) for s in steps_of(record, "approval")]
    assert approvals == [(False, "a person said no"), (True, "a person (always, for this run)"),
                         (True, "a person (always, for this run)")]
    assert not (tmp_path / "notes" / "projects" / "meeting.md").exists()
    assert (tmp_path / "notes" / "projects" / "second.md").is_file()
    assert (tmp_path / "notes" / "projects" / "third.md").is_file()
    refusal = json.loads(chat.requests[1]["messages"][-1]["content"])["error"]["message"]
    assert refusal == "note_write writes and was not approved"


PROMPT = b"allow? [y]es / [n]o / [a]lways for this run [n]: "


def at_terminal(root: Path, typed: list[bytes | int]) -> tuple[subprocess.Popen[str], str, str, float]:
    """``ctx agent run filer TASK`` with stdin and stderr on a pty: at each prompt the next of
    ``typed`` is typed (bytes) or sent as a signal (int). The process, what the terminal showed, its
    stdout, and the seconds from the last answer to its exit."""
    import pty
    import select

    main, child = pty.openpty()
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("CTX_CONFIG", None)
    proc = subprocess.Popen([sys.executable, "-m", "context_harness", "agent", "run", "filer", TASK], cwd=root,
                            env=env, stdin=child, stderr=child, stdout=subprocess.PIPE, text=True)
    os.close(child)
    seen, answers, last = b"", list(typed), time.monotonic()
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([main], [], [], 0.05)
            if ready:
                try:
                    seen += os.read(main, 4096)
                except OSError:
                    break
            if answers and seen.count(PROMPT) == len(typed) - len(answers) + 1:
                answer = answers.pop(0)
                if isinstance(answer, int):
                    proc.send_signal(answer)
                else:
                    os.write(main, answer)
                last = time.monotonic()
        out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        took = time.monotonic() - last
        while select.select([main], [], [], 0)[0]:
            try:
                seen += os.read(main, 4096)
            except OSError:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    shown = seen.decode("utf-8", "replace")
    assert not answers, f"not asked as often as expected:\n{shown}"
    assert "Traceback" not in shown and "Fatal Python error" not in shown, shown
    return proc, shown, out, took


def test_a_person_at_a_terminal_is_asked(tmp_path: Path) -> None:
    """On a terminal (stdin and stderr a pty) each write shows the call and asks y / n / a; an answer
    that is none of them asks again."""
    second = {**NOTE, "path": "projects/second.md"}
    script = [tool_calls([("note_write", NOTE)]), tool_calls([("note_write", second)]), message("Filed.")]
    with ScriptedChat(script, model="local") as chat:
        run_workspace(tmp_path, chat.url)
        proc, shown, out, _ = at_terminal(tmp_path, [b"y\n", b"maybe\n", b"n\n"])
    assert proc.returncode == 0, shown
    assert 'note_write writes: {"source": "filesystem:notes", "path": "projects/meeting.md"' in shown
    assert "note_write: approved by a person" in shown
    assert "'maybe' is not one of y, n, a" in shown and "note_write: not approved (a person said no)" in shown
    assert out.strip() == "Filed."
    assert (tmp_path / "notes" / "projects" / "meeting.md").is_file()
    assert not (tmp_path / "notes" / "projects" / "second.md").exists()


def test_ctrl_c_at_the_prompt_stops_the_run_at_once(tmp_path: Path) -> None:
    with ScriptedChat([tool_calls([("note_write", NOTE)]), message("never")], model="local") as chat:
        run_workspace(tmp_path, chat.url)
        proc, shown, _, took = at_terminal(tmp_path, [signal.SIGINT])
    assert proc.returncode == 130, shown
    assert took < 10, f"Ctrl-C at the prompt took {took:.1f} s to end the run"
    assert "= stopped: stopped by the user (interrupted)" in shown
    [run] = json.loads(ctx("agent", "runs", "--json", cwd=tmp_path).stdout)["runs"]
    assert run["status"] == "stopped"
    assert not (tmp_path / "notes" / "projects").exists()


@pytest.mark.parametrize(("sent", "code", "status", "background"), [
    (signal.SIGINT, 130, "stopped", False), (signal.SIGINT, 130, "stopped", True),
    (signal.SIGTERM, 130, "stopped", False), (signal.SIGKILL, -9, "interrupted", False),
], ids=["ctrl-c", "ctrl-c-background-job", "sigterm", "killed"])
def test_a_run_stopped_midway_says_so(tmp_path: Path, sent: int, code: int, status: str, background: bool) -> None:
    """Ctrl-C (and SIGTERM) end a run as stopped, exit 130, also in a background job (`cmd &`, which
    starts with SIGINT ignored); a run whose process is killed outright shows as interrupted, never
    running forever."""

    with ScriptedChat([tool_calls([("search", {"query": "permit"})]), delay(30, message("too late"))],
                      model="local") as chat:
        run_workspace(tmp_path, chat.url)
        env = {**os.environ, "NO_COLOR": "1"}
        env.pop("CTX_CONFIG", None)
        command = [sys.executable, "-m", "context_harness", "agent", "run", "filer", TASK]
        if background:  # as `cmd &` starts it: SIGINT ignored, inherited through exec
            command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while len(chat.requests) < 2 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.02)
            assert len(chat.requests) == 2, "the run never asked the model a second time"
            began = time.monotonic()
            proc.send_signal(sent)
            out, err = proc.communicate(timeout=15)
            took = time.monotonic() - began
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == code, err
    assert took < 10, f"the run took {took:.1f} s to end"
    assert "Traceback" not in err
    [run] = json.loads(ctx("agent", "runs", "--json", cwd=tmp_path).stdout)["runs"]
    assert run["status"] == status
    record = json.loads(ctx("agent", "show", run["id"], "--json", cwd=tmp_path).stdout)
    assert record["status"] == status
    if status == "stopped":
        assert "= stopped: stopped by the user (interrupted)" in err
        assert record["reason"].startswith("stopped by the user") and record["ended_at"] is not None
        assert [s["kind"] for s in record["steps"]] == ["start", "model", "tool", "end"]
    else:
        assert record["reason"] == f"the process running it (pid {proc.pid}) ended before the run did"
        assert [s["kind"] for s in record["steps"]] == ["start", "model", "tool"]
        assert f"{run['id']}  " in ctx("agent", "runs", cwd=tmp_path).stdout
