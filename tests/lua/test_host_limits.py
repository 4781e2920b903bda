"""What a script cannot do to the host: replace the library functions the host uses, hang at load
time, or make host functions (json.*, http.*) build more than its memory cap allows or run past
its deadline. Real worker processes, a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_harness.config import LuaConfig, ScriptConfig
from context_harness.errors import ConfigError, HarnessError, Timeout, ToolError
from context_harness.lua.pool import shared_pool
from context_harness.lua.tools import LuaTool
from context_harness.lua.worker import MEMORY_EXIT
from support.lua_fire import BombServer, peak_rss

pytestmark = pytest.mark.slow

POISON_ALL = """
local setmt, loop = setmetatable, function() while true do end end
for _, lib in next, { string, table, math, utf8, coroutine, os } do
  for k in next, lib do lib[k] = loop end
end
for _, name in next, { "type", "pairs", "ipairs", "next", "tostring", "tonumber", "rawget", "rawset",
    "rawequal", "rawlen", "select", "error", "pcall", "xpcall", "assert", "setmetatable", "getmetatable",
    "load", "print" } do
  _G[name] = loop
end
tool = { description = "poisoned everything", parameters = { {name = "n", type = "integer"} } }
function tool.execute(params) return { ok = "still here", n = params.n, list = {1, 2, 3} } end
setmt(_G, { __index = loop, __newindex = loop })
"""

# The issue's case: the top level replaces string.gmatch, which the host's own lookups used to call.
POISON_GMATCH = """
string.gmatch = function() while true do end end
tool = { description = "gmatch poisoned", parameters = { {name = "n", type = "integer"} } }
function tool.execute() return "hi" end
"""

NORMAL = """
tool = { description = "uses the string library", parameters = { {name = "s", type = "string"} } }
function tool.execute(params)
  local words = {}
  for w in params.s:gmatch("%S+") do words[#words + 1] = w:upper() end
  return table.concat(words, ",")
end
"""


def make(tmp_path: Path, name: str, source: str, timeout: float = 3, **kw: Any) -> LuaTool:
    path = tmp_path / f"{name}.lua"
    path.write_text(source)
    return LuaTool(name, ScriptConfig(path=path, timeout=timeout, **kw), LuaConfig(http_allow=["127.0.0.1"]),
                   max_instances=1)


def timed(fn: Any) -> tuple[Any, float]:
    started = time.monotonic()
    try:
        return fn(), time.monotonic() - started
    except HarnessError as exc:
        return exc, time.monotonic() - started


# -- globals poisoning --------------------------------------------------------------------------


@pytest.mark.parametrize("source", [POISON_GMATCH, POISON_ALL], ids=["gmatch", "everything"])
def test_a_script_replacing_library_functions_does_not_reach_the_host(tmp_path: Path, source: str) -> None:
    normal = make(tmp_path, "normal", NORMAL)
    assert normal.call({"s": "a b"}) == "A,B"

    tool, elapsed = timed(lambda: make(tmp_path, "poisoned", source))
    assert isinstance(tool, LuaTool), tool
    result, call_elapsed = timed(lambda: tool.call({"n": 3}))
    assert elapsed + call_elapsed < 3 + 1.0
    assert result in ("hi", {"ok": "still here", "n": 3, "list": [1, 2, 3]})
    assert tool.description in ("gmatch poisoned", "poisoned everything")
    # The poisoned script hurt only itself: the other tool still answers, unchanged.
    for _ in range(3):
        assert normal.call({"s": "x y z"}) == "X,Y,Z"
    assert tool.call({"n": 4}) in ("hi", {"ok": "still here", "n": 4, "list": [1, 2, 3]})


HANGS_AT_LOAD = {
    "lua_loop": "while true do end",
    "c_backtracking": 'string.find(string.rep("a", 5000), ".-.-.-.-.-.-b")',
    "poisoned_then_used": 'string.gmatch = function() while true do end end for w in ("a b"):gmatch("%S+") do end',
    "metadata_index_loop": "tool = setmetatable({}, { __index = function() while true do end end })",
    "metadata_index_c_hang": "tool = setmetatable({ execute = function() end }, { __index = function() "
                             'return string.find(string.rep("a", 5000), ".-.-.-.-.-.-b") end })',
}


@pytest.mark.parametrize("name", list(HANGS_AT_LOAD))
def test_a_script_hanging_at_load_stops_within_its_timeout(tmp_path: Path, name: str) -> None:
    source = HANGS_AT_LOAD[name] + "\ntool = tool or {}\nfunction tool.execute() return 1 end\n"
    error, elapsed = timed(lambda: make(tmp_path, name, source, timeout=2))
    assert isinstance(error, (ConfigError, Timeout)), error
    assert elapsed < 2 + 1.0, (name, elapsed)
    assert "took longer than 2 s" in error.message or "timed out" in error.message, error.message
    assert make(tmp_path, "normal", NORMAL).call({"s": "ok"}) == "OK"


# -- host functions under the memory cap and the deadline ----------------------------------------

BOMBS = """
tool = { parameters = { {name = "mode", type = "string"}, {name = "url", type = "string"} } }
function tool.execute(p)
  if p.mode == "encode" then
    local t = {} for i = 1, 40 do t = {t, t} end
    return #json.encode(t)
  elseif p.mode == "encode_body" then
    local t = {} for i = 1, 40 do t = {t, t} end
    return http.post(p.url .. "/ok", t).status
  elseif p.mode == "parse" then
    return json.parse("[" .. string.rep("{},", 3000000) .. "{}]")
  elseif p.mode == "parse_deep" then
    return json.parse(string.rep("[", 1000000) .. string.rep("]", 1000000))
  end
  local r = http.get(p.url .. "/" .. p.mode)
  return {r.status, #r.body, type(r.json)}
end
"""


@pytest.fixture(scope="module")
def bombs() -> Iterator[BombServer]:
    with BombServer() as server:
        yield server


@pytest.mark.parametrize(("mode", "message"), [
    ("encode", "json.encode: argument #1 cannot be passed to the host: it holds too many values"),
    ("encode_body", "http.post: argument #2 cannot be passed to the host: it holds too many values"),
    ("parse", "json.parse: the JSON text holds up to"),
    ("parse_deep", "json.parse: the JSON text holds up to"),
    ("wide", "http.get: the JSON text holds up to"),
    ("deep", "http.get: the JSON text holds up to"),
    ("endless", "exceeds the 10000000-byte limit ([lua] max_response_bytes)"),
    ("huge", "exceeds the 10000000-byte limit ([lua] max_response_bytes)"),
])
def test_host_function_bombs_stop_with_a_clear_error_and_bounded_memory(
        tmp_path: Path, bombs: BombServer, mode: str, message: str) -> None:
    tool = make(tmp_path, "bombs", BOMBS)
    assert tool.call({"mode": "ok", "url": bombs.url}) == [200, 12, "table"]
    with peak_rss(shared_pool()) as peak:
        error, elapsed = timed(lambda: tool.call({"mode": mode, "url": bombs.url}))
    assert type(error) is ToolError, error
    assert message in error.message
    assert "memory_limit" in error.message or "max_response_bytes" in error.message
    assert elapsed < 3 + 1.0
    # The worker's allowance is what it held before plus 2 x 64 MB + 64 MB; these stay far below.
    assert peak[0] < 160 * 1024 * 1024, peak[0]  # 0 when the call ended before the first sample
    assert tool.call({"mode": "ok", "url": bombs.url}) == [200, 12, "table"]


def test_a_response_just_within_the_budget_is_delivered_within_the_allowance(tmp_path: Path,
                                                                              bombs: BombServer) -> None:
    """450,000 strings: as many values as a 64 MB script may receive. It arrives, the worker stays
    within its allowance (what it held before + 2 x 64 MB + 64 MB), and it arrives again (the garbage
    of the first response is collected to make room)."""
    tool = make(tmp_path, "strings", BOMBS, timeout=15)  # converting 450,000 values takes 1-3 s
    for _ in range(2):
        with peak_rss(shared_pool()) as peak:
            result, elapsed = timed(lambda: tool.call({"mode": "strings", "url": bombs.url}))
        assert result == [200, 9_000_001, "table"], result
        assert elapsed < 15 + 1.0
        assert peak[0] < 24 * 1024 * 1024 + 192 * 1024 * 1024, peak[0]


def test_the_issue_timeouts_hold_for_the_json_encode_bomb(tmp_path: Path) -> None:
    """Even with room for far more values, the deadline stops the measuring walk at the timeout."""
    tool = make(tmp_path, "roomy", BOMBS, timeout=1, memory_limit=4 * 1024**3)
    error, elapsed = timed(lambda: tool.call({"mode": "encode"}))
    assert isinstance(error, (Timeout, ToolError)), error
    assert elapsed < 1 + 1.0


def test_a_worker_past_its_memory_allowance_exits_with_the_memory_code() -> None:
    """The backstop behind the budgets: whatever allocates, a request that grows the worker past
    its allowance ends the process with ``MEMORY_EXIT`` (reported as out of memory)."""
    code = (
        "import time\n"
        "import context_harness.lua.worker as w\n"
        "w.HOST_SLACK = 16 << 20\n"
        "watch = w.MemoryWatch()\n"
        "watch.start(8 << 20)\n"
        "blob = b'x' * (200 << 20)\n"
        "time.sleep(2)\n"
    )
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    assert proc.returncode == MEMORY_EXIT, proc.stderr
    assert b"exiting" in proc.stderr
    assert time.monotonic() - started < 10
