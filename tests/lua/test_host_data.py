"""Host functions never fail internally on data (issue 27, items 6 and 10): numbers past Lua's
64-bit integers follow Lua's rules, malformed URLs and over-long ids are clean refusals, a table
whose keys collide in JSON is an error naming them, and a host function's unexpected exception is a
script error naming the function. Real Lua: worker processes for scripts, a sandbox in this
process for the property tests of the host functions themselves."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_harness.config import LuaConfig
from context_harness.errors import ToolError
from context_harness.lua.bridge import MAX_ID_BYTES
from context_harness.lua.convert import LUA_MAX_INT, LUA_MIN_INT
from context_harness.lua.host import ERROR, OK, HostAPI, guard
from context_harness.lua.runtime import HostSettings, Sandbox

PROBE = """
tool = {description = "probe", parameters = {{name = "case", type = "string", required = true},
                                             {name = "text", type = "string", default = ""}}}
function tool.execute(p, context)
  if p.case == "parse" then return json.parse(p.text) end
  if p.case == "get" then return context.get(p.text) end
  if p.case == "http" then return http.get(p.text) end
  if p.case == "int_keys" then return {[1] = "int", ["1"] = "str"} end
  if p.case == "bool_keys" then return {x = {[true] = 1, ["true"] = 2}} end
  if p.case == "encode" then return json.encode({[2] = "b", ["2"] = "c"}) end
end
"""
BIG = st.one_of(st.integers(min_value=LUA_MAX_INT + 1, max_value=10**40),
                st.integers(min_value=-(10**40), max_value=LUA_MIN_INT - 1))
EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def probe(make_tool: Any) -> Any:
    return make_tool(PROBE, name="probe", lua=LuaConfig(http_allow=["127.0.0.1:9"]))


def run(tool: Any, case: str, text: str = "", context: Any = None) -> Any:
    return tool.call(tool.validate({"case": case, "text": text}), context)


@given(number=BIG)
@EXAMPLES
def test_json_parse_of_integers_past_64_bits_gives_floats(probe: Any, number: int) -> None:
    assert run(probe, "parse", str(number)) == float(number)
    nested = run(probe, "parse", json.dumps({"n": [number, 7, LUA_MAX_INT, LUA_MIN_INT]}))
    assert nested == {"n": [float(number), 7, LUA_MAX_INT, LUA_MIN_INT]}


def test_json_parse_of_integers_past_the_float_range_is_infinite(probe: Any) -> None:
    digits = "9" * 5000  # past Python's own 4,300-digit limit for int() too
    with pytest.raises(ToolError, match="not a JSON number"):  # inf is a Lua number, not a JSON result
        run(probe, "parse", digits)


@pytest.mark.parametrize("url", ["http://[::ffff:127.1]/", "http://[zz]/", "http://[1.2.3.4]/",
                                 "http://[::1/", "http://[]/", "https://[v1.x]:80/"])
def test_malformed_bracketed_hosts_are_clean_refusals(probe: Any, url: str, caplog: Any) -> None:
    with caplog.at_level(logging.WARNING), pytest.raises(ToolError) as err:
        run(probe, "http", url)
    assert err.value.message.startswith("Lua tool 'probe' failed: http.get: ")
    assert "unexpectedly" not in err.value.message and "internal" not in err.value.message
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "no traceback is logged"


def test_context_get_refuses_an_over_long_id(probe: Any, fake_context: Any) -> None:
    with pytest.raises(ToolError, match=f"the document id is 10000000 bytes long; ids are at most {MAX_ID_BYTES}"):
        run(probe, "get", "x" * 10_000_000, fake_context)
    with pytest.raises(ToolError, match="context.get: document") as err:  # at the bound it reaches the context
        run(probe, "get", "x" * MAX_ID_BYTES, fake_context)
    assert "at most" not in err.value.message


@pytest.mark.parametrize(("case", "message"), [
    ("int_keys", r"result: keys (1 and \"1\"|\"1\" and 1) both become '1' in JSON; keep only one of them"),
    ("bool_keys", r"result.x: keys (true and \"true\"|\"true\" and true) both become 'true' in JSON"),
    ("encode", r"json.encode: value: keys (2 and \"2\"|\"2\" and 2) both become '2' in JSON"),
])
def test_keys_that_collide_in_json_are_an_error_naming_them(probe: Any, case: str, message: str) -> None:
    with pytest.raises(ToolError, match=message) as err:
        run(probe, case)
    assert "memory limit" not in err.value.message


# -- the host functions themselves, in a sandbox in this process -------------------------------

def host(tmp_path: Path) -> tuple[Sandbox, HostAPI]:
    sandbox = Sandbox()
    api = HostAPI(sandbox, label="fuzz", script_dir=tmp_path,
                  lua_config=HostSettings(http_allow=["127.0.0.1:9"], env_allow=[], max_response_bytes=4096),
                  env_names=[])
    return sandbox, api


def test_an_unexpected_exception_is_a_script_error_naming_the_function(tmp_path: Path, caplog: Any) -> None:
    sandbox, _ = host(tmp_path)

    def broken(*_: Any) -> Any:
        return {}["missing"]

    with caplog.at_level(logging.ERROR, logger="context_harness.lua.host"):
        status, message = guard(sandbox, "crypto.sha256", broken)()
    assert status == ERROR
    assert message.decode() == "crypto.sha256 failed unexpectedly (KeyError); the server log has the details"
    assert "crypto.sha256 failed" in caplog.text  # with its traceback, for whoever fixes it


LUA_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=LUA_MIN_INT, max_value=LUA_MAX_INT),
                        st.floats(), st.binary(max_size=40), st.text(max_size=40).map(str.encode))
FUNCTIONS = ["json.parse", "json.encode", "env.get", "fs.read", "fs.list", "base64.encode", "base64.decode",
             "crypto.sha256", "crypto.hmac_sha256", "http.get", "http.post", "sleep", "log.info"]


@given(name=st.sampled_from(FUNCTIONS), args=st.lists(st.one_of(LUA_SCALARS, st.just("TABLE")), max_size=3),
       table=st.dictionaries(st.one_of(st.integers(-3, 3), st.binary(max_size=5)), LUA_SCALARS, max_size=4))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_host_functions_never_fail_internally_on_data(tmp_path: Path, name: str, args: list[Any],
                                                      table: dict[Any, Any]) -> None:
    sandbox, api = host(tmp_path)
    sandbox.deadline = float("inf")
    group, _, member = name.partition(".")
    functions = {
        "json": {"parse": api.json_parse, "encode": api.json_encode}, "env": {"get": api.env_get},
        "fs": {"read": api.fs_read, "list": api.fs_list},
        "base64": {"encode": api.base64_encode, "decode": api.base64_decode},
        "crypto": {"sha256": api.sha256, "hmac_sha256": api.hmac_sha256},
        "http": {"get": api._http("GET"), "post": api._http("POST")},
        "sleep": {"": lambda s=None: api.sleep(min(s, 0.01) if isinstance(s, (int, float)) else s)},
        "log": {"info": api._log("info")},
    }
    fn = functions[group][member]
    lua_args = [sandbox.lua.table_from(table) if a == "TABLE" else a for a in args]
    status, value = guard(sandbox, name, fn)(*lua_args)
    if status != OK:
        assert status == ERROR, (status, value)
        text = value.decode()
        assert text.startswith(f"{name}: ") and "internal error" not in text, text  # a clean script error


class ExplodingContext:
    """A knowledge base whose every call fails with an exception nobody planned for."""

    def search(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        raise RuntimeError("boom")

    def get(self, id: str) -> dict[str, Any]:
        raise RuntimeError("boom")

    def sources(self) -> list[dict[str, Any]]:
        raise RuntimeError("boom")


def test_an_unexpected_failure_of_the_knowledge_base_names_the_context_function(probe: Any, caplog: Any) -> None:
    with caplog.at_level(logging.ERROR), pytest.raises(ToolError) as err:
        run(probe, "get", "d1", ExplodingContext())
    assert err.value.message == ("Lua tool 'probe' failed: context.get: failed unexpectedly (RuntimeError); "
                                 "the server log has the details")
    assert "boom" not in err.value.message and "context.get call failed" in caplog.text
