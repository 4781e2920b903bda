"""Lua under fire (issue 16, item 8): 70 hostile scripts run three at a time while normal traffic
(searches and a Lua tool call, each in a loop) goes on. Nothing may escape: a canary file outside
the scripts' folder is neither read nor written, a secret in the workers' environment appears in no
result, error or log, and a listener on 127.0.0.1 receives no connection. Every script stops within
its timeout + 1 s, and the normal traffic stays responsive (its worst latency is printed).

Real worker processes, a real knowledge base, a real HTTP server (the one address ``http_allow``
lists) and the canary listener, all on 127.0.0.1. Bounded: about a minute on two cores."""

from __future__ import annotations

import secrets
import socket
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.config import LuaConfig, ScriptConfig
from context_harness.core.context import HarnessContext
from context_harness.core.harness import Harness
from context_harness.errors import ConfigError, HarnessError, Timeout
from context_harness.lua import pool as pool_mod
from context_harness.lua.tools import LuaTool
from context_harness.models import SearchRequest
from support.lua_fire import BombServer, Canary

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

TIMEOUT = 2.0
PARALLEL = 3
SECRET_NAME = "CTX_BATTERY_SECRET"
LOOP = "local function loop() while true do end end"
BACKTRACK = 'string.find(string.rep("a", 5000), ".-.-.-.-.-.-b")'
DAG = "local t = {} for i = 1, 40 do t = {t, t} end"

FAILS, ERROR, TIMES_OUT = "fails", "error", "timeout"

# (name, Lua code, expected): code is the body of tool.execute(p, context) -- or the script's top
# level when the name starts with "top_"; expected is FAILS (any error or timeout), ERROR (not a
# timeout), TIMES_OUT, or ("=", the exact result).
ATTACKS: list[tuple[str, str, Any]] = [
    # lupa's Python bridge and attribute access on what the host passes in
    ("python_eval", 'return python.eval("__import__(\'os\').system(\'id\')")', ERROR),
    ("python_builtins", "return python.builtins.open(p.cpath).read()", ERROR),
    ("python_rawget", 'return {rawget(_G, "python") == nil, rawget(_ENV, "python") == nil}', ("=", [True, True])),
    ("host_fn_class", "return http.get.__class__", ERROR),
    ("context_class", "return context.search.__class__.__mro__", ERROR),
    ("context_globals", "return context.get.__globals__", ERROR),
    ("userdata_walk", """
local seen, found = {}, {}
local function walk(v, path, depth)
  if depth > 6 or seen[v] then return end
  local t = type(v)
  if t == "userdata" then found[#found + 1] = path return end
  if t ~= "table" then return end
  seen[v] = true
  for k, x in next, v do walk(x, path .. "." .. tostring(k), depth + 1) end
  local mt = getmetatable(v)
  if type(mt) == "table" then walk(mt, path .. "<mt>", depth + 1) end
end
walk(_G, "_G", 0) walk(context, "context", 0)
return #found""", ("=", 0)),
    ("host_fn_metatable", "return tostring(getmetatable(http.get)) .. tostring(getmetatable(context.search))",
     ("=", "nilnil")),
    ("string_metatable", 'local mt = getmetatable("") mt.__index = {} return "changed"', ERROR),
    ("error_object_tostring", 'error(setmetatable({}, {__tostring = function() return os.getenv(p.secret) end}))',
     ERROR),
    # load variants and bytecode
    ("load_bytecode_text", 'local f, e = load("\\27LuaT\\0\\25\\147\\r\\n\\26\\n") assert(f, e) return f()', ERROR),
    ("load_binary_mode", 'local f, e = load(string.dump and string.dump(print) or "\\27Lua", "x", "b") '
     "assert(f, e) return f()", ERROR),
    ("load_reader_function", 'local f, e = load(function() return "return os.execute" end) assert(f, e) return f()',
     ERROR),
    ("load_env_escape", 'local f = load("return io or require or debug or package", "x", "t", nil) '
     "return tostring(f())", ("=", "nil")),
    ("string_dump", "return load(string.dump(function() return 1 end))()", ERROR),
    ("loaders", 'return (loadstring or dofile or loadfile or require)("os")', ERROR),
    ("package_loadlib", 'return package.loadlib("libc.so.6", "system")', ERROR),
    ("debug_hook", "debug.sethook() " + LOOP + " loop()", ERROR),
    ("collectgarbage", 'collectgarbage("stop") return 1', ERROR),
    ("gc_metamethod", "setmetatable({}, {__gc = function() end}) return 1", ERROR),
    # os, io, environment variables, files
    ("io_read_canary", 'return io.open(p.cpath):read("a")', ERROR),
    ("io_write_canary", 'io.open(p.cpath, "w"):write("pwned") return 1', ERROR),
    ("os_execute", 'return os.execute("touch pwned")', ERROR),
    ("os_remove", "return os.remove(p.cpath)", ERROR),
    ("os_rename", 'return os.rename(p.cpath, p.cpath .. ".moved")', ERROR),
    ("os_getenv", "return os.getenv(p.secret)", ERROR),
    ("env_get_secret", 'return env.get(p.secret) or "absent"', ("=", "absent")),
    ("env_get_common", 'return (env.get("PATH") or "") .. (env.get("HOME") or "") .. (env.get("USER") or "")',
     ("=", "")),
    ("fs_parent", 'return fs.read("../secret/canary.txt")', ERROR),
    ("fs_absolute", "return fs.read(p.cpath)", ERROR),
    ("fs_symlink", 'return fs.read("link.txt")', ERROR),
    ("fs_list_parent", 'return fs.list("..")', ERROR),
    ("fs_nul", 'return fs.read("x\\0/../../secret/canary.txt")', ERROR),
    ("context_get_path", "return context.get(p.cpath)", ERROR),
    ("context_get_traversal", 'return context.get("../../../../etc/passwd")', ERROR),
    # SSRF: the canary listens on 127.0.0.1; only the bomb server's port is listed
    ("ssrf_loopback", 'return http.get("http://127.0.0.1:" .. p.cport .. "/").status', ERROR),
    ("ssrf_localhost", 'return http.get("http://localhost:" .. p.cport .. "/").status', ERROR),
    ("ssrf_ipv6_loopback", 'return http.get("http://[::1]:" .. p.cport .. "/").status', ERROR),
    ("ssrf_decimal", 'return http.get("http://2130706433:" .. p.cport .. "/").status', ERROR),
    ("ssrf_hex", 'return http.get("http://0x7f000001:" .. p.cport .. "/").status', ERROR),
    ("ssrf_octal", 'return http.get("http://0177.0.0.1:" .. p.cport .. "/").status', ERROR),
    ("ssrf_short", 'return http.get("http://127.1:" .. p.cport .. "/").status', ERROR),
    ("ssrf_zero", 'return http.get("http://0.0.0.0:" .. p.cport .. "/").status', ERROR),
    ("ssrf_mapped", 'return http.get("http://[::ffff:127.0.0.1]:" .. p.cport .. "/").status', ERROR),
    ("ssrf_userinfo", 'return http.get("http://127.0.0.1:" .. p.aport .. "@127.0.0.1:" .. p.cport .. "/").status',
     ERROR),
    ("ssrf_private", 'return http.get("http://10.0.0.1/").status', ERROR),
    ("ssrf_metadata", 'return http.get("http://169.254.169.254/latest/meta-data/").status', ERROR),
    ("ssrf_cgnat", 'return http.get("http://100.64.0.1/").status', ERROR),
    ("ssrf_ula", 'return http.get("http://[fd00::1]/").status', ERROR),
    ("ssrf_file_scheme", 'return http.get("file://" .. p.cpath).body', ERROR),
    ("header_injection", 'return http.get(p.url .. "/ok", {headers = {X = "a\\r\\nHost: evil"}}).status', ERROR),
    ("redirect_loopback", 'return http.get(p.url .. "/redirect?to=http://127.0.0.1:" .. p.cport .. "/").status',
     ERROR),
    ("redirect_localhost", 'return http.get(p.url .. "/redirect?to=http://localhost:" .. p.cport .. "/").status',
     ERROR),
    ("redirect_relative", 'return http.get(p.url .. "/redirect?to=//127.0.0.1:" .. p.cport .. "/").status', ERROR),
    ("redirect_metadata", 'return http.get(p.url .. "/redirect?to=http://169.254.169.254/").status', ERROR),
    ("redirect_decimal", 'return http.get(p.url .. "/redirect?to=http://2130706433:" .. p.cport .. "/").status',
     ERROR),
    # CPU and memory, in Lua and in C, and in host functions
    ("cpu_loop", LOOP + " loop()", TIMES_OUT),
    ("cpu_pcall_swallow", "while true do pcall(function() while true do end end) end", TIMES_OUT),
    ("cpu_coroutine", "local f = coroutine.wrap(function() while true do end end) while true do pcall(f) end",
     TIMES_OUT),
    ("cpu_xpcall_handler", LOOP + " xpcall(loop, loop)", TIMES_OUT),
    ("cpu_c_backtrack", "return " + BACKTRACK, TIMES_OUT),
    ("cpu_c_backtrack_gsub", 'return (string.gsub(string.rep("a", 5000), ".-.-.-.-.-.-b", ""))', TIMES_OUT),
    ("sleep_forever", "sleep(1e9)", TIMES_OUT),
    ("mem_tables", "local t = {} for i = 1, 1e9 do t[i] = {i} end", ERROR),
    ("mem_c_rep", 'return #string.rep("x", 1e9)', ERROR),
    ("mem_concat", 'local s = {} for i = 1, 64 do s[i] = string.rep("x", 1e6) end '
     "local all = {} for i = 1, 64 do all[i] = table.concat(s) end return #all", ERROR),
    ("deep_recursion", "local function f(n) return 1 + f(n + 1) end return f(1)", ERROR),
    ("json_encode_dag", DAG + " return json.encode(t)", ERROR),
    ("json_parse_wide", 'return json.parse("[" .. string.rep("{},", 3000000) .. "{}]")', ERROR),
    ("http_json_bomb", 'return #http.get(p.url .. "/wide").body', ERROR),
    ("http_endless", 'return #http.get(p.url .. "/endless").body', ERROR),
    ("context_search_dag", DAG + ' return context.search({query = "x", filters = t})', ERROR),
    ("cyclic_result", "local t = {} t.self = t return t", ERROR),
    ("result_metamethods", "return setmetatable({}, {__index = loop, __pairs = loop, __len = loop})",
     ("=", {})),
    # at load time (the script's top level)
    ("top_poison_globals", "string.gmatch = function() while true do end end type = string.gmatch "
     "pairs = type rawget = type", ("=", "fine")),
    ("top_spin", "while true do end", FAILS),
    ("top_c_hang", BACKTRACK, FAILS),
    ("top_memory", 'local t = {} for i = 1, 1e9 do t[i] = string.rep("x", 64) .. i end', FAILS),
]

# What the error must say, by name prefix: each attack fails for the reason it should, not by accident.
MUST_SAY = {
    "ssrf_file": ("use http:// or https://",),
    "ssrf_": ("refuses non-public addresses",),
    "redirect_": ("refuses non-public addresses",),
    "header_injection": ("line break",),
    "fs_": ("only paths relative", "'..' is not allowed", "leads outside"),
    "mem_": ("out of memory", "not enough memory"),
    "json_": ("memory_limit",),
    "http_json": ("memory_limit",),
    "http_endless": ("max_response_bytes",),
    "context_search": ("memory_limit",),
    "context_get": ("not found", "no document"),
    "python_": ("attempt to index",),
    "io_": ("attempt to index",),
    "os_": ("attempt to call", "attempt to index"),
}

SCRIPT = """
local function loop() while true do end end
{top}
tool = tool or {{}}
tool.description = "hostile"
tool.parameters = {{ {{name = "url", type = "string"}}, {{name = "cport", type = "integer"}},
  {{name = "aport", type = "integer"}}, {{name = "cpath", type = "string"}}, {{name = "secret", type = "string"}} }}
function tool.execute(p, context)
  do
{body}
  end
  return "fine"
end
"""


class Outcome:
    def __init__(self, name: str, expected: Any) -> None:
        self.name = name
        self.expected = expected
        self.result: Any = None
        self.error: HarnessError | None = None
        self.elapsed = 0.0


def run_attack(folder: Path, name: str, code: str, expected: Any, lua: LuaConfig, args: dict[str, Any],
               context: HarnessContext) -> Outcome:
    outcome = Outcome(name, expected)
    top, body = (code, "") if name.startswith("top_") else ("", code)
    path = folder / f"{name}.lua"
    path.write_text(SCRIPT.format(top=top, body=body))
    started = time.monotonic()
    try:
        tool = LuaTool(name, ScriptConfig(path=path, timeout=TIMEOUT, memory_limit=32 * 1024 * 1024), lua,
                       max_instances=1)
        outcome.elapsed = time.monotonic() - started
        started = time.monotonic()
        outcome.result = tool.call(args, context)
    except HarnessError as exc:
        outcome.error = exc
    outcome.elapsed = max(outcome.elapsed, time.monotonic() - started)
    return outcome


def check(outcome: Outcome) -> str | None:
    """What is wrong with ``outcome`` (None when it is as expected)."""
    error, expected = outcome.error, outcome.expected
    if outcome.elapsed >= TIMEOUT + 1.0:
        return f"took {outcome.elapsed:.2f} s"
    if isinstance(expected, tuple):
        if error is None and outcome.result == expected[1]:
            return None
        return f"got {outcome.result!r:.200} / {error!r:.300}"
    if error is None:
        return f"did not fail: {outcome.result!r:.200}"
    if not outcome.name.startswith("top_") and isinstance(error, ConfigError):
        return f"did not load: {error.message:.300}"
    for prefix, phrases in MUST_SAY.items():
        if outcome.name.startswith(prefix):
            if not any(phrase in error.message for phrase in phrases):
                return f"failed for another reason: {error.message:.300}"
            break
    timed_out = isinstance(error, Timeout) or (isinstance(error, ConfigError) and "took longer" in error.message)
    if expected == TIMES_OUT and not timed_out:
        return f"expected a timeout, got {error!r}"
    if expected == ERROR and timed_out:
        return f"expected an error, got a timeout: {error!r}"
    return None


async def test_hostile_scripts_under_normal_traffic(tmp_path: Path, make_tools_workspace: Any,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    assert len(ATTACKS) >= 40 and len({a[0] for a in ATTACKS}) == len(ATTACKS)
    secret = "s3cr3t-" + secrets.token_hex(12)
    monkeypatch.setenv(SECRET_NAME, secret)
    # Fresh workers, started after the secret is in the environment they inherit.
    fresh = pool_mod.WorkerPool(warm=PARALLEL + 1)
    monkeypatch.setattr(pool_mod, "_POOL", fresh)

    canary_dir = tmp_path / "secret"
    canary_dir.mkdir()
    canary = canary_dir / "canary.txt"
    canary_text = "canary-" + secrets.token_hex(12)
    canary.write_text(canary_text)
    canary_stat = canary.stat()
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "link.txt").symlink_to(canary)

    config_path = make_tools_workspace(tmp_path)
    caplog.set_level("DEBUG")
    try:
        with BombServer() as bombs, Canary() as listener:
            with socket.create_connection(("127.0.0.1", listener.port), timeout=5):  # the canary works
                pass
            for _ in range(100):
                if listener.connections:
                    break
                time.sleep(0.02)
            assert len(listener.connections) == 1
            listener.connections.clear()
            lua = LuaConfig(http_allow=["*", f"127.0.0.1:{bombs.port}"])
            args = {"url": bombs.url, "cport": listener.port, "aport": bombs.port, "cpath": str(canary),
                    "secret": SECRET_NAME}
            async with Harness.open(config_mod.load(config_path)) as harness:
                await harness.sync()
                outcomes, latencies = await _fire(harness, scripts, lua, args)
            connections = list(listener.connections)
    finally:
        fresh.close()

    problems = {o.name: why for o in outcomes if (why := check(o)) is not None}
    assert problems == {}, "\n".join(f"{k}: {v}" for k, v in problems.items())
    assert len(outcomes) == len(ATTACKS)
    # Nothing escaped.
    assert connections == []
    assert canary.read_text() == canary_text and canary.stat().st_mtime_ns == canary_stat.st_mtime_ns
    assert sorted(p.name for p in canary_dir.iterdir()) == ["canary.txt"]
    assert not (tmp_path / "pwned").exists() and not (scripts / "pwned").exists()
    seen = [repr(o.result) for o in outcomes] + [o.error.message for o in outcomes if o.error is not None]
    seen += [record.getMessage() for record in caplog.records]
    assert not [s for s in seen if secret in s or canary_text in s]
    # Normal traffic kept answering throughout.
    for kind, values in latencies.items():
        assert len(values) >= 10, kind
        assert max(values) < 5.0, (kind, max(values))  # a tool call may wait for a worker to start
    stops = sorted(o.elapsed for o in outcomes)
    print(f"\n{len(outcomes)} hostile scripts; slowest stop {stops[-1]:.2f} s (timeout {TIMEOUT:g} s); "
          + "; ".join(f"{k}: {len(v)} calls, max {max(v) * 1000:.0f} ms, p50 {sorted(v)[len(v) // 2] * 1000:.0f} ms"
                      for k, v in latencies.items()))


async def _fire(harness: Harness, scripts: Path, lua: LuaConfig,
                args: dict[str, Any]) -> tuple[list[Outcome], dict[str, list[float]]]:
    context = HarnessContext(harness)
    outcomes: list[Outcome] = []
    latencies: dict[str, list[float]] = {"search": [], "tool": []}
    done = threading.Event()
    limiter = anyio.CapacityLimiter(PARALLEL)

    async def attack(name: str, code: str, expected: Any) -> None:
        outcomes.append(await anyio.to_thread.run_sync(
            run_attack, scripts, name, code, expected, lua, args, context, limiter=limiter))

    async def searches() -> None:
        while not done.is_set():
            started = time.monotonic()
            response = await harness.search(SearchRequest(query="lua sandbox", limit=3))
            latencies["search"].append(time.monotonic() - started)
            assert response.results
            await anyio.sleep(0.02)

    async def tool_calls() -> None:
        while not done.is_set():
            started = time.monotonic()
            result = await harness.call_tool("echo", {"text": "hello"})
            latencies["tool"].append(time.monotonic() - started)
            assert result.payload == {"result": {"echo": "> hello", "length": 5}}, result.payload
            await anyio.sleep(0.02)

    with anyio.fail_after(240):
        async with anyio.create_task_group() as traffic:
            traffic.start_soon(searches)
            traffic.start_soon(tool_calls)
            async with anyio.create_task_group() as hostile:
                for name, code, expected in ATTACKS:
                    hostile.start_soon(attack, name, code, expected)
            done.set()
    return outcomes, latencies
