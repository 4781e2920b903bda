"""Lua calls cannot starve the server (issue 27, item 5): Lua tool calls run on their own bounded
limiter, apart from anyio's default one; one tool's calls beyond ``[lua] max_calls_per_tool``
wait at most ``max_queued_per_tool`` deep, the rest answer ``busy`` at once; time spent waiting
counts against the call's ``timeout``; and another tool still answers at once. Real Harness, real
Lua workers, the real MCP client in memory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import Busy, HarnessError, Timeout
from context_harness.lua.pool import shared_pool
from context_harness.server.mcp import build_server

pytestmark = pytest.mark.anyio

SLOW = """
tool = {description = "sleeps", parameters = {{name = "s", type = "number", default = 2.5}}}
function tool.execute(p) sleep(p.s) return "slept" end
"""
TIMEOUT = 4.0
EXTRA = f"""
[tools.script.slow]
path = "tools/slow.lua"
timeout = {TIMEOUT}

[lua]
max_calls_per_tool = 2
max_queued_per_tool = 3
"""


@pytest.fixture
def slow_config(tmp_path: Path, make_tools_workspace: Any) -> Path:
    config_path = make_tools_workspace(tmp_path, EXTRA)
    (tmp_path / "tools" / "slow.lua").write_text(SLOW, encoding="utf-8")
    return config_path


async def spare_ready() -> None:
    """Wait until the burst holds its workers and the pool's spare helper process has started (it
    is started in the background when the idle ones run out: ~0.3 s, more on a loaded machine)."""
    await anyio.sleep(0.2)
    with anyio.fail_after(20):
        while shared_pool().idle_count() < 1:
            await anyio.sleep(0.02)


async def timed_call(harness: Harness, name: str, arguments: dict[str, Any]) -> tuple[str, float]:
    """``(outcome, seconds)``: the result or the error code of one call, and its wall time."""
    start = time.monotonic()
    try:
        await harness.call_tool(name, arguments)
        outcome = "ok"
    except HarnessError as exc:
        outcome = exc.code
    return outcome, time.monotonic() - start


@pytest.mark.slow
async def test_a_burst_of_one_tool_queues_then_answers_busy_and_others_still_run(slow_config: Path) -> None:
    async with Harness.open(config_mod.load(slow_config)) as harness:
        await harness.call_tool("echo", {"text": "warm"})  # workers started before the clock runs
        await harness.call_tool("search", {"query": "tantivy", "mode": "keyword"})  # the index opened
        outcomes: list[tuple[str, float]] = []
        default_borrowed: list[float] = []

        async def one() -> None:
            outcomes.append(await timed_call(harness, "slow", {}))

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(one)
            await spare_ready()
            default_borrowed.append(anyio.to_thread.current_default_thread_limiter().borrowed_tokens)
            echo = await timed_call(harness, "echo", {"text": "still here"})  # another tool: a slot of its own
            keyword = await timed_call(harness, "search", {"query": "tantivy", "mode": "keyword"})

        assert echo[0] == "ok" and echo[1] < 1.0, echo
        assert keyword[0] == "ok" and keyword[1] < 1.0, keyword
        assert default_borrowed == [0], "Lua calls must not hold anyio's default thread limiter"
        by_kind: dict[str, list[float]] = {}
        for outcome, seconds in outcomes:
            by_kind.setdefault(outcome, []).append(seconds)
        assert len(by_kind["busy"]) == 3 and max(by_kind["busy"]) < 0.5, by_kind  # 8 - 2 running - 3 queued
        assert len(by_kind["ok"]) == 2, by_kind  # the first two; the queued ones run out of time waiting
        assert len(by_kind["timeout"]) == 3, by_kind
        assert max(s for _, s in outcomes) <= TIMEOUT + 1.0, by_kind  # waiting counted against the timeout


@pytest.mark.slow
async def test_busy_and_waited_out_errors_name_the_fix(slow_config: Path) -> None:
    async with Harness.open(config_mod.load(slow_config)) as harness:
        errors: list[HarnessError] = []

        async def one() -> None:
            try:
                await harness.call_tool("slow", {"s": 5})
            except HarnessError as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(one)
        busy = [e for e in errors if isinstance(e, Busy)]
        assert busy and "max_calls_per_tool and max_queued_per_tool" in busy[0].message
        waited = [e for e in errors if isinstance(e, Timeout) and "waiting for a free slot" in e.message]
        assert len(waited) == 3 and "set `timeout`" in waited[0].message


async def test_busy_reaches_an_mcp_client_as_a_tool_error(slow_config: Path) -> None:
    async with Harness.open(config_mod.load(slow_config)) as harness:
        server = build_server(harness)
        async with Client(server) as client:
            results: list[Any] = []

            async def one() -> None:
                results.append(await client.call_tool("slow", {"s": 0.5}))

            async with anyio.create_task_group() as tg:
                for _ in range(7):
                    tg.start_soon(one)
            busy = [r for r in results if r.is_error and "is busy" in r.content[0].text]
            assert len(busy) == 2, [r.content[0].text for r in results]


SLOW_AGENT = """
agent = {description = "slow"}
function agent.resolve() sleep(1.5) return {system = "done"} end
"""


async def test_slow_lua_agents_do_not_hold_the_threads_searches_need(slow_config: Path) -> None:
    root = slow_config.parent
    (root / "agents").mkdir()
    (root / "agents" / "slow.lua").write_text(SLOW_AGENT, encoding="utf-8")
    with slow_config.open("a", encoding="utf-8") as config:
        config.write('\n[agents.script.slowagent]\npath = "agents/slow.lua"\n')
    async with Harness.open(config_mod.load(slow_config)) as harness:
        await harness.sync()
        await timed_call(harness, "search", {"query": "tantivy", "mode": "keyword"})  # opens the index
        outcomes: list[str] = []

        async def resolve() -> None:
            try:
                await harness.resolve_agent("slowagent")
                outcomes.append("ok")
            except HarnessError as exc:
                outcomes.append(exc.code)

        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(resolve)
            await spare_ready()
            keyword = await timed_call(harness, "search", {"query": "tantivy", "mode": "keyword"})
            echo = await timed_call(harness, "echo", {"text": "x"})
        assert keyword[0] == "ok" and keyword[1] < 1.0, keyword
        assert echo[0] == "ok" and echo[1] < 1.0, echo
        assert outcomes.count("ok") >= 2, outcomes
