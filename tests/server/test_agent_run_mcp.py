"""The MCP tool ``agent_run`` through the real MCP client in memory: with a configured ``[models]`` entry
(the scripted chat server), and with none, where a client that declares sampling lends its own model
(its sampling callback answers a tool use, then text) and one that declares elicitation asks its user
before each write (the callback says yes, or declines). Both protocol eras where the SDK offers the
server-to-client requests (the 2026-07-28 era has none within a tools/call: its client lends nothing)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as t
import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.server.mcp import build_server
from support.agent_runs import FILER_PROMPT, NOTE, run_workspace, steps_of
from support.chat_server import ScriptedChat, message, tool_calls

pytestmark = pytest.mark.anyio
TASK = "File the meeting notes"
MODES = ["legacy", "auto"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def chat() -> Any:
    with ScriptedChat([tool_calls([("search", {"query": "shed permit"})]), tool_calls([("note_write", NOTE)]),
                       message("Searched; the write was refused.")], model="local") as server:
        yield server


async def opened(config: Path) -> AsyncIterator[Harness]:
    async with Harness.open(config_mod.load(config)) as harness:
        await harness.sync()
        yield harness


@pytest.fixture
async def configured(tmp_path: Path, chat: ScriptedChat) -> AsyncIterator[Harness]:
    async for harness in opened(run_workspace(tmp_path, chat.url)):
        yield harness


@pytest.fixture
async def modelless(tmp_path: Path) -> AsyncIterator[Harness]:
    async for harness in opened(run_workspace(tmp_path, None)):
        yield harness


def structured(result: t.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def test_agent_run_with_a_configured_model(configured: Harness, chat: ScriptedChat, mode: str,
                                                 tmp_path: Path) -> None:
    async with Client(build_server(configured), mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["agent_run"].annotations.read_only_hint is False
        out = structured(await client.call_tool("agent_run", {"agent": "filer", "task": TASK}))
    assert out["status"] == "finished" and out["answer"] == "Searched; the write was refused."
    assert out["agent"] == "filer" and out["steps"] >= 8 and out["tokens"]["prompt"] > 0
    assert chat.requests[0]["messages"][0] == {"role": "system", "content": FILER_PROMPT}
    assert [f["function"]["name"] for f in chat.requests[0]["tools"]] == ["search", "get", "note_write"]
    assert not (tmp_path / "notes" / "projects").exists(), "a client that cannot ask: no write"
    record = await configured.agent_run_record(out["id"])
    [approval] = steps_of(record, "approval")
    assert approval["approved"] is False
    refusal = json.loads(chat.requests[2]["messages"][-1]["content"])["error"]
    assert refusal["code"] == "refused" and refusal["message"].startswith("note_write writes and was not approved")
    assert (await configured.agent_runs())[0]["id"] == out["id"]


async def test_agent_run_names_no_model_when_the_client_cannot_sample(modelless: Harness, mode: str) -> None:
    async with Client(build_server(modelless), mode=mode) as client:
        result = await client.call_tool("agent_run", {"agent": "filer", "task": TASK})
    assert result.is_error
    text = result.content[0].text
    assert "no chat model is configured" in text and "[models.NAME]" in text


async def test_the_2026_era_has_no_back_channel_to_lend_through(modelless: Harness) -> None:
    """A tools/call of the 2026-07-28 protocol cannot send the client requests: its sampling is not
    used (the run is refused before it starts, naming the fix), never a run failing midway."""
    lender = Lender()
    capabilities = t.SamplingCapability(tools=t.SamplingToolsCapability())
    async with Client(build_server(modelless), mode="auto", sampling_callback=lender.sample,
                      sampling_capabilities=capabilities, elicitation_callback=lender.elicit) as client:
        result = await client.call_tool("agent_run", {"agent": "filer", "task": TASK})
    assert result.is_error and "no chat model is configured" in result.content[0].text
    assert lender.sampled == [] and lender.asked == []
    assert await modelless.agent_runs() == []


class Lender:
    """A client's model (sampling: a tool use, then text) and its user (elicitation: ``answer``)."""

    def __init__(self, answer: str = "yes", action: str = "accept") -> None:
        self.answer, self.action = answer, action
        self.sampled: list[t.CreateMessageRequestParams] = []
        self.asked: list[Any] = []

    async def sample(self, context: Any, params: t.CreateMessageRequestParams) -> Any:
        self.sampled.append(params)
        if len(self.sampled) == 1:
            return t.CreateMessageResultWithTools(
                role="assistant", model="client-model", stop_reason="toolUse",
                content=[t.TextContent(type="text", text="Writing it."),
                         t.ToolUseContent(type="tool_use", id="tu_1", name="note_write", input=NOTE)])
        return t.CreateMessageResult(role="assistant", model="client-model", stop_reason="endTurn",
                                     content=t.TextContent(type="text", text="Filed."))

    async def elicit(self, context: Any, params: Any) -> t.ElicitResult:
        self.asked.append(params)
        return t.ElicitResult(action=self.action, content={"decision": self.answer} if self.action == "accept" else None)


async def run_lent(harness: Harness, lender: Lender, mode: str, tools: bool = True) -> dict[str, Any]:
    capabilities = t.SamplingCapability(tools=t.SamplingToolsCapability()) if tools else t.SamplingCapability()
    async with Client(build_server(harness), mode=mode, sampling_callback=lender.sample,
                      sampling_capabilities=capabilities, elicitation_callback=lender.elicit) as client:
        return structured(await client.call_tool("agent_run", {"agent": "filer", "task": TASK}))


async def test_the_clients_model_and_its_users_yes(modelless: Harness, tmp_path: Path) -> None:
    lender = Lender("yes")
    out = await run_lent(modelless, lender, "legacy")
    assert (out["status"], out["answer"]) == ("finished", "Filed.")
    assert (tmp_path / "notes" / "projects" / "meeting.md").is_file()

    first = lender.sampled[0]
    assert first.system_prompt == FILER_PROMPT
    assert [(m.role, m.content.text) for m in first.messages] == [("user", TASK)]
    offered = {tool.name: tool for tool in first.tools or []}
    assert list(offered) == ["search", "get", "note_write"]
    real = {tool.name: tool for tool in modelless.tools()}
    assert offered["note_write"].input_schema == real["note_write"].input_schema
    assert first.max_tokens > 0

    [asked] = lender.asked
    assert "note_write" in asked.message and "projects/meeting.md" in asked.message
    assert asked.requested_schema["properties"]["decision"]["enum"] == ["yes", "no", "always"]

    second = lender.sampled[1]
    assistant, results = second.messages[-2], second.messages[-1]
    assert assistant.role == "assistant"
    uses = [b for b in assistant.content if isinstance(b, t.ToolUseContent)]
    assert [(u.id, u.name, u.input) for u in uses] == [("tu_1", "note_write", NOTE)]
    [result] = results.content if isinstance(results.content, list) else [results.content]
    assert results.role == "user" and isinstance(result, t.ToolResultContent) and result.tool_use_id == "tu_1"
    assert result.content[0].text.startswith("Written projects/meeting.md in filesystem:notes")

    record = await modelless.agent_run_record(out["id"])
    assert record["model"] == "sampling"
    [approval] = steps_of(record, "approval")
    assert approval["approved"] is True and approval["by"] == "a person"


@pytest.mark.parametrize(("answer", "action"), [("no", "accept"), ("yes", "decline"), ("yes", "cancel")])
async def test_the_clients_user_refuses(modelless: Harness, tmp_path: Path, answer: str, action: str) -> None:
    lender = Lender(answer, action)
    out = await run_lent(modelless, lender, "legacy")
    assert (out["status"], out["answer"]) == ("finished", "Filed.")
    assert not (tmp_path / "notes" / "projects").exists()
    assert len(lender.asked) == 1
    fed = lender.sampled[1].messages[-1].content
    [result] = fed if isinstance(fed, list) else [fed]
    error = json.loads(result.content[0].text)["error"]
    assert error["code"] == "refused" and error["message"] == "note_write writes and was not approved"
    record = await modelless.agent_run_record(out["id"])
    [approval] = steps_of(record, "approval")
    assert (approval["approved"], approval["by"]) == (False, "a person said no")


async def test_sampling_without_tools_gets_no_tools(modelless: Harness) -> None:
    lender = Lender()
    lender.sampled.append(None)  # type: ignore[arg-type]  # skip the tool use: answer text at once
    out = await run_lent(modelless, lender, "legacy", tools=False)
    assert (out["status"], out["answer"]) == ("finished", "Filed.")
    [params] = lender.sampled[1:]
    assert params.tools is None and params.system_prompt == FILER_PROMPT


async def test_the_clients_model_over_streamable_http(tmp_path: Path, start_server: Any) -> None:
    """The same over the real HTTP transport (uvicorn on 127.0.0.1): the stateful session carries the
    sampling and elicitation requests back to the client while its tools/call runs."""
    server = start_server(config_mod.load(run_workspace(tmp_path, None)))
    lender = Lender("yes")
    capabilities = t.SamplingCapability(tools=t.SamplingToolsCapability())
    async with Client(f"{server.url}/mcp", mode="legacy", sampling_callback=lender.sample,
                      sampling_capabilities=capabilities, elicitation_callback=lender.elicit) as client:
        out = structured(await client.call_tool("agent_run", {"agent": "filer", "task": TASK}))
    assert (out["status"], out["answer"]) == ("finished", "Filed.")
    assert len(lender.sampled) == 2 and len(lender.asked) == 1
    assert (tmp_path / "notes" / "projects" / "meeting.md").is_file()


async def test_a_user_who_never_answers_does_not_hold_the_run(tmp_path: Path) -> None:
    """An elicitation the client never answers waits no longer than the run's max_seconds: the write
    is refused and the run ends at its budget."""
    async def never(context: Any, params: Any) -> t.ElicitResult:
        await anyio.sleep(3600)
        raise AssertionError("unreachable")

    with ScriptedChat([tool_calls([("note_write", NOTE)]), message("never asked")], model="local") as chat:
        config = run_workspace(tmp_path, chat.url, model_keys="max_seconds = 2")
        async for harness in opened(config):
            async with Client(build_server(harness), mode="legacy", elicitation_callback=never) as client:
                began = time.monotonic()
                out = structured(await client.call_tool("agent_run", {"agent": "filer", "task": TASK}))
                took = time.monotonic() - began
            record = await harness.agent_run_record(out["id"])
    assert took < 10, f"2 s allowed, took {took:.1f} s"
    assert (out["status"], out["reason"]) == ("budget", "max_seconds (2 s) reached")
    [approval] = steps_of(record, "approval")
    assert (approval["approved"], approval["by"]) == (False, "no answer within the run's max_seconds (2 s)")
    assert not (tmp_path / "notes" / "projects").exists() and len(chat.requests) == 1


async def test_each_step_is_reported_as_progress(configured: Harness) -> None:
    seen: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, message))

    async with Client(build_server(configured), mode="legacy") as client:
        out = structured(await client.call_tool("agent_run", {"agent": "filer", "task": TASK},
                                                progress_callback=progress))
    assert out["status"] == "finished"
    assert [n for n, _ in seen] == list(range(1, out["steps"] + 1)), "one notification a step, in order"
    assert seen[0][1] == "start" and seen[-1][1] == "end finished"
    assert ("approval note_write" in [m for _, m in seen]) and ("tool search" in [m for _, m in seen])


@pytest.mark.parametrize(("arguments", "fragment"), [
    ({"agent": "filler", "task": TASK}, "unknown agent 'filler' (did you mean 'filer'?)"),
    ({"agent": "filer", "task": " "}, "the task is empty"),
    ({"agent": "filer", "task": TASK, "model": "nosuch"}, "the run names model 'nosuch'"),
])
async def test_what_cannot_start_is_a_tool_error(configured: Harness, mode: str, arguments: dict[str, Any],
                                                 fragment: str) -> None:
    async with Client(build_server(configured), mode=mode) as client:
        result = await client.call_tool("agent_run", arguments)
    assert result.is_error and fragment in result.content[0].text
    assert await configured.agent_runs() == []


async def test_the_question_shows_every_flag_after_a_long_content(modelless: Harness, tmp_path: Path) -> None:
    """The issue's case: the confirmation text was cut at 2,000 characters, so a 5,000-character content
    hid the path and the overwrite flag that followed it. Now each long value is shortened and every key
    is shown, with the call's id and digest."""
    sneaky = {"source": "filesystem:notes", "content": "harmless words " * 400, "path": "permit.md", "overwrite": True}

    class Sneaky(Lender):
        async def sample(self, context: Any, params: t.CreateMessageRequestParams) -> Any:
            self.sampled.append(params)
            if len(self.sampled) == 1:
                return t.CreateMessageResultWithTools(
                    role="assistant", model="client-model", stop_reason="toolUse",
                    content=[t.ToolUseContent(type="tool_use", id="tu_1", name="note_write", input=sneaky)])
            return t.CreateMessageResult(role="assistant", model="client-model", stop_reason="endTurn",
                                         content=t.TextContent(type="text", text="Done."))

    lender = Sneaky("no")
    out = await run_lent(modelless, lender, "legacy")
    assert out["status"] == "finished"
    [asked] = lender.asked
    assert '"path": "permit.md"' in asked.message and '"overwrite": true' in asked.message
    assert "more characters]" in asked.message and len(asked.message) < 1000
    record = await modelless.agent_run_record(out["id"])
    [approval] = steps_of(record, "approval")
    assert f"call {approval['request']}, digest {approval['digest'][:12]}" in asked.message
    assert "harmless words" not in (tmp_path / "notes" / "permit.md").read_text(encoding="utf-8")
