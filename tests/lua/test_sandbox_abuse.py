"""Escape-and-abuse battery: hostile scripts end in a clear ToolError/Timeout within timeout + 1 s,
and the next legitimate call on the same tool (same runtime) succeeds."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from context_harness.config import LuaConfig, ScriptConfig
from context_harness.errors import HarnessError, Timeout, ToolError
from context_harness.lua.tools import LuaTool

TIMEOUT = 0.5

# (id, Lua statements run by tool.execute(params, context) when params.mode == "attack", expected)
ATTACKS: list[tuple[str, str, type[HarnessError]]] = [
    # files and processes
    ("io_open", 'return io.open("/etc/passwd"):read("a")', ToolError),
    ("io_popen", 'return io.popen("id"):read("a")', ToolError),
    ("os_execute", 'return os.execute("touch /tmp/pwned")', ToolError),
    ("os_getenv", 'return os.getenv("HOME")', ToolError),
    ("os_remove", 'return os.remove("/tmp/x")', ToolError),
    ("os_exit", "os.exit(1)", ToolError),
    ("require_os", 'return require("os").execute("id")', ToolError),
    ("package_loadlib", 'return package.loadlib("libc.so.6", "system")', ToolError),
    ("dofile", 'return dofile("/etc/passwd")', ToolError),
    ("loadfile", 'return loadfile("/etc/passwd")()', ToolError),
    ("fs_dotdot", 'return fs.read("../../../../etc/passwd")', ToolError),
    ("fs_absolute", 'return fs.read("/etc/passwd")', ToolError),
    ("fs_symlink_escape", 'return fs.read("escape/passwd")', ToolError),
    # bytecode and dump
    ("load_bytecode", 'return assert(load("\\27Lua\\84\\0\\25\\147\\13\\10\\26\\10"))()', ToolError),
    ("string_dump", "return load(string.dump(function() return 1 end))()", ToolError),
    ("method_dump", "return ((''):dump(function() end))", ToolError),
    ("load_reader_fn", "return assert(load(function() return nil end))()", ToolError),
    # debug, python, metatables, _ENV
    ("debug_sethook", "debug.sethook()", ToolError),
    ("debug_registry", "return debug.getregistry()", ToolError),
    ("python_eval", 'return python.eval("__import__(\'os\').system(\'id\')")', ToolError),
    ("python_builtins", "return python.builtins.open('/etc/passwd').read()", ToolError),
    ("string_metatable", "local mt = getmetatable(''); mt.__index = nil; return mt", ToolError),
    ("string_mt_dump", "return getmetatable('').__index.dump", ToolError),
    ("env_walk", "return _ENV._G.io.open('/etc/passwd')", ToolError),
    ("rawget_debug", "return rawget(_G, 'debug').getinfo(1)", ToolError),
    ("load_custom_env", "return load('return io', 't', 't', setmetatable({}, {__index = _G}))().open('/etc/passwd')", ToolError),
    ("collectgarbage", "collectgarbage('stop') return 1", ToolError),
    ("gc_finalizer", "setmetatable({}, {__gc = function() while true do end end}) return 1", ToolError),
    # Python object attribute walks through the context object
    ("context_class", "return context.search.__class__.__mro__", ToolError),
    ("context_metatable", "return getmetatable(context.search).__index", ToolError),
    ("context_error_object", "local ok, e = pcall(context.get, 'missing'); return e.__class__.__init__.__globals__", ToolError),
    ("context_globals", "return context.__dict__.current.__class__", ToolError),
    # coroutines and hooks
    ("coroutine_loop", "local co = coroutine.create(function() while true do end end) return coroutine.resume(co)", Timeout),
    ("coroutine_wrap_pcall", "local f = coroutine.wrap(function() while true do end end) while true do pcall(f) end", Timeout),
    ("yield_out", "coroutine.yield('escape') while true do end", ToolError),
    ("nested_coroutines", "local function spin() local co = coroutine.create(function() while true do end end) return coroutine.resume(co) end while true do pcall(spin) end", Timeout),
    # time
    ("infinite_loop", "while true do end", Timeout),
    ("pcall_swallow", "while true do pcall(function() while true do end end) end", Timeout),
    ("xpcall_handler_loop", "while true do xpcall(function() while true do end end, function() while true do end end) end", Timeout),
    ("error_in_close", "local x <close> = setmetatable({}, {__close = function() while true do end end}) while true do end", Timeout),
    ("tostring_loop", "return string.format('%s', setmetatable({}, {__tostring = function() while true do end end}))", Timeout),
    ("table_move_range", "return table.move({}, 1, 1e15, 2)", Timeout),
    ("table_insert_fake_len", "local t = setmetatable({}, {__len = function() return 1e15 end}) table.insert(t, 1, 'x')", Timeout),
    ("sleep_past_deadline", "sleep(30) return 'woke'", Timeout),
    ("sleep_in_pcall", "while true do pcall(sleep, 30) end", Timeout),
    ("slow_http", "return http.get(params.url .. '/slow?s=5')", Timeout),
    ("drip_http", "return http.get(params.url .. '/drip')", Timeout),
    ("slow_http_pcall", "while true do pcall(http.get, params.url .. '/slow?s=5') end", Timeout),
    # memory and recursion
    ("string_bomb", "return string.rep('x', 1e9)", ToolError),
    ("table_bomb", "local t = {} for i = 1, 1e9 do t[i] = {i} end return #t", ToolError),
    ("concat_bomb", "local s = 'x' while true do s = s .. s end", ToolError),
    ("deep_recursion", "local function f(n) return 1 + f(n + 1) end return f(1)", ToolError),
    ("pcall_memory_loop", "local keep = {} while true do local ok = pcall(string.rep, 'x', 1e8) keep[#keep + 1] = ('y'):rep(1e6) end", ToolError),
    # results that are not data
    ("huge_result", "local t = {} for i = 1, 20 do t[i] = string.rep(string.char(64 + i), 1e6) end return t", ToolError),
    ("dag_bomb_result", "local t = {} for i = 1, 40 do t = {t, t} end return t", ToolError),
    ("cyclic_result", "local t = {} t.self = t return t", ToolError),
    ("function_result", "return {f = function() end}", ToolError),
    ("coroutine_result", "return coroutine.create(function() end)", ToolError),
    ("nan_result", "return {x = 0/0}", ToolError),
    ("error_huge_message", "error(string.rep('e', 1e7))", ToolError),
    ("error_table_tostring_loop", "error(setmetatable({}, {__tostring = function() while true do end end}))", ToolError),
]

SCRIPT = """
tool = {{
  description = "hostile",
  parameters = {{ {{name = "mode", type = "string", required = true}}, {{name = "url", type = "string"}} }},
}}
function tool.execute(params, context)
  if params.mode == "ok" then
    local hits = context.search("sandbox", {{limit = 1}})
    return {{ fine = true, hits = #hits, sum = (function() local s = 0 for i = 1, 1000 do s = s + i end return s end)() }}
  end
  {attack}
end
"""


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0")
    folder = tmp_path / "scripts"
    folder.mkdir()
    os.symlink(outside, folder / "escape")
    return folder


def test_battery_has_at_least_thirty_scripts() -> None:
    assert len(ATTACKS) >= 30
    assert len({name for name, _, _ in ATTACKS}) == len(ATTACKS)


@pytest.mark.parametrize(("name", "attack", "expected"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_hostile_script_fails_cleanly_and_runtime_recovers(
        name: str, attack: str, expected: type[HarnessError], hostile_dir: Path, fake_context: Any,
        http_server: Any) -> None:
    path = hostile_dir / f"{name}.lua"
    path.write_text(SCRIPT.format(attack=attack))
    tool = LuaTool(name, ScriptConfig(path=path, timeout=TIMEOUT, memory_limit=32 * 1024 * 1024),
                   LuaConfig(http_allow=["127.0.0.1"]), max_instances=1)

    started = time.monotonic()
    with pytest.raises(HarnessError) as info:
        tool.call({"mode": "attack", "url": http_server.url}, fake_context)
    elapsed = time.monotonic() - started

    assert type(info.value) is expected, info.value.message
    assert elapsed < TIMEOUT + 1.0
    message = info.value.message
    assert message.startswith(f"Lua tool '{name}'")
    assert "Traceback" not in message and "lupa" not in message and len(message) < 2200
    if expected is Timeout:
        assert "timed out after 0.5 s" in message

    assert tool.call({"mode": "ok"}, fake_context) == {"fine": True, "hits": 1, "sum": 500500}


def test_timeout_does_not_leak_into_the_next_call(make_tool: Any) -> None:
    tool = make_tool("""
tool = { parameters = { {name = "spin", type = "boolean", default = false} } }
function tool.execute(params) if params.spin then while true do end end return "ok" end
""", timeout=TIMEOUT)
    with pytest.raises(Timeout):
        tool.call({"spin": True})
    for _ in range(3):
        assert tool.call({}) == "ok"


def test_empty_string_rep_returns_quickly(make_tool: Any) -> None:
    tool = make_tool('tool = {} function tool.execute() return #(""):rep(1e15) + #string.rep("", 1e15, "") end',
                     timeout=TIMEOUT)
    assert tool.call({}) == 0


def test_failed_load_is_a_config_error_not_a_hang(write_script: Any) -> None:
    from context_harness.errors import ConfigError

    path = write_script("while true do end", "spin.lua")
    started = time.monotonic()
    with pytest.raises(ConfigError) as info:
        LuaTool("spin", ScriptConfig(path=path, timeout=0.3), LuaConfig())
    assert time.monotonic() - started < 1.3
    assert "loading took longer" in info.value.message
