"""Host APIs (http, json, env, log, fs, base64, crypto, sleep) against a real server on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from typing import Any

import pytest

from context_harness.config import LuaConfig
from context_harness.errors import Timeout, ToolError

LOCAL = ["127.0.0.1"]  # the test server's address: non-public, so it must be listed


def run(make_tool: Any, body: str, *, args: dict[str, Any] | None = None, **kw: Any) -> Any:
    kw.setdefault("lua", LuaConfig(http_allow=LOCAL))
    source = f"""
tool = {{ parameters = {{ {{name = "url", type = "string"}}, {{name = "s", type = "string"}} }} }}
function tool.execute(params, context)
{body}
end
"""
    return make_tool(source, **kw).call(args or {})


# -- http ---------------------------------------------------------------------------------------


def test_http_get_with_headers_and_params(make_tool: Any, http_server: Any) -> None:
    result = run(make_tool, """
local r = http.get(params.url .. "/echo", {headers = {["X-Token"] = "abc"}, params = {q = "lua sandbox", n = 3}})
return {status = r.status, ok = r.ok, method = r.json.method, query = r.json.query,
        token = r.json.headers["x-token"], header = r.headers["x-test"], ctype = r.headers["content-type"]}
""", args={"url": http_server.url})
    assert result == {"status": 200, "ok": True, "method": "GET", "query": {"q": "lua sandbox", "n": "3"},
                      "token": "abc", "header": "yes", "ctype": "application/json"}


@pytest.mark.parametrize("method", ["post", "put", "patch"])
def test_http_body_forms(make_tool: Any, http_server: Any, method: str) -> None:
    result = run(make_tool, f"""
local a = http.{method}(params.url .. "/echo", '{{"raw": true}}', {{headers = {{["Content-Type"] = "application/json"}}}})
local b = http.{method}(params.url .. "/echo", {{json = {{n = 1, empty = {{}}}}}})
local c = http.{method}(params.url .. "/echo", {{a = "table body"}})
local d = http.{method}(params.url .. "/echo", {{body = "plain"}})
return {{a.json.method, a.json.body, b.json.body, b.json.headers["content-type"], c.json.body, d.json.body}}
""", args={"url": http_server.url})
    assert result[:2] == [method.upper(), '{"raw": true}']
    assert json.loads(result[2]) == {"n": 1, "empty": {}}
    assert result[3:] == ["application/json", '{"a":"table body"}', "plain"]


def test_http_delete_status_text_and_binary(make_tool: Any, http_server: Any) -> None:
    result = run(make_tool, """
local d = http.delete(params.url .. "/echo")
local nf = http.get(params.url .. "/status/404")
local t = http.get(params.url .. "/text")
local b = http.get(params.url .. "/binary")
return {d.json.method, nf.status, nf.ok, nf.json.error, t.json == nil, t.body, #b.body, crypto.sha256(b.body)}
""", args={"url": http_server.url})
    assert result == ["DELETE", 404, False, "nope", True, "plain text, not json", 256,
                      hashlib.sha256(bytes(range(256))).hexdigest()]


def test_http_follows_redirects_and_stops_loops(make_tool: Any, http_server: Any) -> None:
    assert run(make_tool, 'return http.get(params.url .. "/redirect").json.query.from',
               args={"url": http_server.url}) == "redirect"
    with pytest.raises(ToolError, match="more than 5 redirects"):
        run(make_tool, 'return http.get(params.url .. "/loop")', args={"url": http_server.url})


def test_http_response_cap(make_tool: Any, http_server: Any) -> None:
    lua = LuaConfig(max_response_bytes=100_000, http_allow=LOCAL)
    with pytest.raises(ToolError, match="exceeds the 100000-byte limit"):
        run(make_tool, 'return http.get(params.url .. "/big")', args={"url": http_server.url}, lua=lua)
    with pytest.raises(ToolError, match="exceeds the 100000-byte limit"):
        run(make_tool, 'return http.get(params.url .. "/big-chunked")', args={"url": http_server.url}, lua=lua)
    # The error is catchable and the script continues.
    assert run(make_tool, 'local ok, e = pcall(http.get, params.url .. "/big") return ok',
               args={"url": http_server.url}, lua=lua) is False


def test_http_allow_list(make_tool: Any, http_server: Any) -> None:
    denied = LuaConfig(http_allow=["api.example.com", "*.example.org"])
    with pytest.raises(ToolError, match=r"host '127.0.0.1' is not in \[lua\] http_allow"):
        run(make_tool, 'return http.get(params.url .. "/echo")', args={"url": http_server.url}, lua=denied)
    allowed = LuaConfig(http_allow=["127.0.0.1"])
    assert run(make_tool, 'return http.get(params.url .. "/echo").status', args={"url": http_server.url},
               lua=allowed) == 200


def test_http_request_timeout_is_a_catchable_error(make_tool: Any, http_server: Any) -> None:
    started = time.monotonic()
    result = run(make_tool, """
local ok, err = pcall(http.get, params.url .. "/slow?s=2", {timeout = 0.2})
return {ok, err}
""", args={"url": http_server.url}, timeout=5)
    assert result[0] is False and "timed out" in result[1]
    assert time.monotonic() - started < 1.5


def test_http_script_deadline_is_a_timeout(make_tool: Any, http_server: Any) -> None:
    started = time.monotonic()
    with pytest.raises(Timeout):
        run(make_tool, 'return http.get(params.url .. "/slow?s=3", {timeout = 10})',
            args={"url": http_server.url}, timeout=0.4)
    assert time.monotonic() - started < 1.4


def test_http_bad_urls_and_refused_connections(make_tool: Any, http_server: Any) -> None:
    for url, message in [("file:///etc/passwd", "use http:// or https://"),
                         ("http://127.0.0.1:1/", "connection refused"),
                         ("ftp://example.com/", "use http:// or https://")]:
        with pytest.raises(ToolError, match=message):
            run(make_tool, "return http.get(params.s)", args={"s": url})
    with pytest.raises(ToolError, match="unknown option"):
        run(make_tool, 'return http.get(params.url, {header = {}})', args={"url": http_server.url})
    with pytest.raises(ToolError, match="line break"):
        run(make_tool, 'return http.get(params.url .. "/echo", {headers = {X = "a\\r\\nB: c"}})',
            args={"url": http_server.url})


# -- json, base64, crypto -------------------------------------------------------------------------


def test_json_roundtrip_and_errors(make_tool: Any) -> None:
    result = run(make_tool, """
local t = json.parse('{"a": [1, 2, {"b": null}], "s": "h\\\\u00e9", "f": 1.5, "t": true}')
local ok, err = pcall(json.parse, "{bad")
local ok2, err2 = pcall(json.encode, {f = print})
return {a2 = t.a[2], s = t.s, f = t.f, t = t.t, empty = json.encode({}), list = json.encode({1, "x"}),
        obj = json.parse(json.encode({k = "v"})).k, err = err, err2 = err2}
""")
    assert result["a2"] == 2 and result["s"] == "hé" and result["f"] == 1.5 and result["t"] is True
    assert result["empty"] == "{}" and result["list"] == '[1,"x"]' and result["obj"] == "v"
    assert "json.parse: invalid JSON at line 1 column 2" in result["err"]
    assert "json.encode" in result["err2"] and "function" in result["err2"]


def test_base64_and_crypto(make_tool: Any) -> None:
    result = run(make_tool, """
return {b64 = base64.encode("hello\\0world"), back = base64.decode(base64.encode("hé")),
        url = base64.decode("_-8"), sha = crypto.sha256("abc"), mac = crypto.hmac_sha256("key", "msg"),
        bad = select(2, pcall(base64.decode, "!!!"))}
""")
    assert result["b64"] == base64.b64encode(b"hello\0world").decode()
    assert result["back"] == "hé"
    assert result["sha"] == hashlib.sha256(b"abc").hexdigest()
    assert result["mac"] == hmac.new(b"key", b"msg", hashlib.sha256).hexdigest()
    assert "invalid base64" in result["bad"]


# -- env, log, sleep, fs ----------------------------------------------------------------------------


def test_env_get_only_granted_names(make_tool: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_TEST_GLOBAL", "g")
    monkeypatch.setenv("CTX_TEST_SCRIPT", "s")
    monkeypatch.setenv("CTX_TEST_SECRET", "nope")
    result = run(make_tool, """
return {env.get("CTX_TEST_GLOBAL"), env.get("CTX_TEST_SCRIPT"), env.get("CTX_TEST_SECRET") == nil, env.get("HOME") == nil}
""", lua=LuaConfig(env_allow=["CTX_TEST_GLOBAL"]), env=["CTX_TEST_SCRIPT"])
    assert result == ["g", "s", True, True]


def test_log_goes_to_python_logging(make_tool: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="context_harness.lua")
    run(make_tool, 'log.debug("d") log.info("hello", 42, {a = 1}) log.warn("w") log.error("e") print("p") return 1',
        name="logger")
    messages = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("context_harness.lua.script")]
    assert ("INFO", '[tool:logger] hello 42 {"a": 1}') in messages
    assert ("DEBUG", "[tool:logger] d") in messages and ("WARNING", "[tool:logger] w") in messages
    assert ("ERROR", "[tool:logger] e") in messages and ("INFO", "[tool:logger] p") in messages


def test_sleep_short_and_interrupted_by_deadline(make_tool: Any) -> None:
    started = time.monotonic()
    assert run(make_tool, "sleep(0.05) return 'slept'") == "slept"
    assert time.monotonic() - started >= 0.05
    started = time.monotonic()
    with pytest.raises(Timeout):
        run(make_tool, "sleep(10) return 'late'", timeout=0.3)
    assert time.monotonic() - started < 1.0
    with pytest.raises(ToolError, match="seconds must be a number"):
        run(make_tool, "sleep('x')")


def test_fs_read_and_list_confined(make_tool: Any, tmp_path: Any) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("note body")
    (tmp_path / "data" / "b.json").write_text('{"k": 1}')
    result = run(make_tool, """
local names = fs.list("data")
local ok, err = pcall(fs.read, "data/../../secret")
local ok2, err2 = pcall(fs.read, "missing.txt")
return {names = names, body = fs.read("data/notes.txt"), k = json.parse(fs.read("data/b.json")).k,
        root_has_script = #fs.list() >= 1, err = err, err2 = err2}
""")
    assert result["names"] == ["b.json", "notes.txt"]
    assert result["body"] == "note body" and result["k"] == 1 and result["root_has_script"]
    assert "'..' is not allowed" in result["err"] and "is not a file" in result["err2"]
