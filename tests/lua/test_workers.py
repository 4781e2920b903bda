"""Lua scripts run in supervised worker processes: long C calls the count hook cannot interrupt are
stopped at the timeout (the worker is killed and replaced), a crashed worker fails one call only,
and other tools and searches keep answering meanwhile. Real processes, real Lua."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.config import LuaConfig, ScriptConfig
from context_harness.core.harness import Harness
from context_harness.errors import HarnessError, Timeout, ToolError
from context_harness.lua.pool import shared_pool
from context_harness.lua.tools import LuaTool
from context_harness.models import SearchRequest

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

HOSTILE = """
tool = { parameters = { {name = "mode", type = "string", required = true} } }
function tool.execute(params)
  if params.mode == "backtrack" then
    return string.find(string.rep("a", 5000), ".-.-.-.-.-.-b")
  elseif params.mode == "rep" then
    return #string.rep("x", 250000000)
  elseif params.mode == "concat" then
    local parts = {}
    for i = 1, 200 do parts[i] = "a" end
    return #table.concat(parts, string.rep("z", 1000000))
  elseif params.mode == "sleep" then
    sleep(5)
  end
  return "fine"
end
"""

BIG = 640 * 1024 * 1024  # room for the huge strings, so the deadline (not the memory cap) stops them


def hostile_tool(tmp_path: Path, timeout: float, memory_limit: int | None = None) -> LuaTool:
    path = tmp_path / "hostile.lua"
    path.write_text(HOSTILE)
    return LuaTool("hostile", ScriptConfig(path=path, timeout=timeout, memory_limit=memory_limit), LuaConfig())


def timed_call(tool: LuaTool, mode: str) -> tuple[HarnessError, float]:
    started = time.monotonic()
    with pytest.raises(HarnessError) as info:
        tool.call({"mode": mode})
    return info.value, time.monotonic() - started


def test_catastrophic_backtracking_stops_at_the_timeout(tmp_path: Path) -> None:
    tool = hostile_tool(tmp_path, timeout=2)
    error, elapsed = timed_call(tool, "backtrack")
    assert type(error) is Timeout, error.message
    assert "Lua tool 'hostile' timed out after 2 s" in error.message
    assert 2.0 <= elapsed < 3.0
    assert tool.call({"mode": "ok"}) == "fine"  # a replacement worker answers


# string.rep of 250 MB byte by byte runs ~2 s in one C call; the 200 MB table.concat ~0.3 s.
@pytest.mark.parametrize(("mode", "timeout"), [("rep", 0.3), ("concat", 0.05)])
def test_huge_c_string_builders_stop_at_the_timeout(tmp_path: Path, mode: str, timeout: float) -> None:
    tool = hostile_tool(tmp_path, timeout=timeout, memory_limit=BIG)
    error, elapsed = timed_call(tool, mode)
    assert type(error) is Timeout, error.message
    assert elapsed < timeout + 1.0
    # A replacement worker answers (given time to load the script: 0.05 s may not cover that under load).
    assert hostile_tool(tmp_path, timeout=10).call({"mode": "ok"}) == "fine"


def test_a_killed_worker_fails_one_call_and_is_replaced(tmp_path: Path) -> None:
    tool = hostile_tool(tmp_path, timeout=10)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            tool.call({"mode": "sleep"})
        except BaseException as exc:
            outcome.append(exc)

    before = set(shared_pool().busy_pids())
    thread = threading.Thread(target=call)
    thread.start()
    deadline = time.monotonic() + 5
    while not (pids := set(shared_pool().busy_pids()) - before) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pids, "the call never reached a worker"
    time.sleep(0.2)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert len(outcome) == 1 and type(outcome[0]) is ToolError
    assert "worker process stopped unexpectedly" in outcome[0].message  # type: ignore[attr-defined]
    assert tool.call({"mode": "ok"}) == "fine"


async def test_other_tools_and_searches_answer_while_a_script_is_stuck_in_c(
        tmp_path: Path, make_tools_workspace: Any) -> None:
    (tmp_path / "tools").mkdir(exist_ok=True)
    (tmp_path / "tools" / "hostile.lua").write_text(HOSTILE)
    cfg = make_tools_workspace(tmp_path, '\n[tools.script.hostile]\npath = "tools/hostile.lua"\ntimeout = 2\n')
    # `modes` gets 5 s here, not the workspace's 0.5 s: on a loaded CI machine starting a second worker
    # alone has taken longer (what is asserted is that it answers while another worker is stuck).
    cfg.write_text(cfg.read_text().replace("timeout = 0.5\n", "timeout = 5\n"))
    async with Harness.open(config_mod.load(cfg)) as harness:
        await harness.sync()
        outcome: list[BaseException] = []

        async def stuck() -> None:
            try:
                await harness.call_tool("hostile", {"mode": "backtrack"})
            except HarnessError as exc:
                outcome.append(exc)

        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(stuck)
            await anyio.sleep(0.3)
            for _ in range(3):
                t0 = time.monotonic()
                result = await harness.call_tool("modes", {"mode": "search"})
                hits = await harness.search(SearchRequest(query="tantivy"))
                assert time.monotonic() - t0 < 1.0
                assert result.payload["result"]["count"] >= 1 and hits.results
            assert not outcome  # still stuck in string.find while the others answered
        elapsed = time.monotonic() - started
    assert len(outcome) == 1 and type(outcome[0]) is Timeout
    assert elapsed < 2.0 * 5  # its timeout, with 5x headroom


BACKTRACK = 'string.find(string.rep("a", 5000), ".-.-.-.-.-.-b")'


def test_connectors_and_agents_stop_at_the_timeout_too(tmp_path: Path, make_connector: Any) -> None:
    from context_harness.connectors.base import ScanReport
    from context_harness.lua.script import CONTEXT, LuaScript

    connector = make_connector(f"connector = {{}}\nfunction connector.scan(config) {BACKTRACK} return {{}} end",
                               timeout=1)
    started = time.monotonic()
    with pytest.raises(Timeout, match="Lua connector 'c' timed out after 1 s"):
        list(connector.scan(ScanReport()))
    assert time.monotonic() - started < 2.0

    path = tmp_path / "agent.lua"
    path.write_text(f"agent = {{}}\nfunction agent.resolve(args, config, context) {BACKTRACK} return 'x' end")
    agent = LuaScript(path, name="slow", kind="agent", global_name="agent", timeout=1)
    started = time.monotonic()
    with pytest.raises(Timeout, match="Lua agent 'slow' timed out after 1 s"):
        agent.call_function("agent.resolve", {}, {}, CONTEXT)
    assert time.monotonic() - started < 2.0
