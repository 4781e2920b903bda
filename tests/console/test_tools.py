"""The console's tools pages and search filters through the real HTTP app under uvicorn: a Lua tool
listed with its origin, a form generated from its schema, a call through the same path as
``POST /tools/{name}`` (same messages), refusals, the search's tag and date filters, and the console
URL ``ctx serve --http`` prints on stderr."""

from __future__ import annotations

import html
import json
import re
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from context_harness import config as config_mod
from context_harness.config import UiConfig
from context_harness.console.tools import controls
from support.console import client, csrf_of
from support.http import BIN, free_port

KINDS_LUA = """
tool = {
  description = "Shows the <b>arguments</b> it was given",
  parameters = {
    { name = "text", type = "string", required = true, description = "Some text to show" },
    { name = "count", type = "integer", default = 2 },
    { name = "ratio", type = "number" },
    { name = "loud", type = "boolean", default = false },
    { name = "colour", type = "string", enum = { "red", "green" } },
    { name = "extra", type = "object" },
  },
}
function tool.execute(params, context)
  local text = params.text
  if params.loud then text = string.upper(text) end
  return { text = text, count = params.count, ratio = params.ratio, colour = params.colour,
           key = params.extra and params.extra.key }
end
"""

NOTES = {
    "alpha.md": "---\ntags: [alpha]\nupdated: 2020-01-15T18:30:00Z\n---\n# Alpha zebra\n\nA zebra note from 2020.\n",
    "beta.md": "---\ntags: [beta, shared]\nupdated: 2025-06-01\n---\n# Beta zebra\n\nA zebra note from 2025.\n",
}


@pytest.fixture
def tools_config(config_path: Path):
    """The knowledge base plus Lua tool ``kinds`` (one parameter of each type), notes with tags and
    dates, and an agent whose scope holds ``search`` only."""
    root = config_path.parent
    (root / "tools").mkdir()
    (root / "tools" / "kinds.lua").write_text(KINDS_LUA, encoding="utf-8")
    for name, text in NOTES.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    with config_path.open("a", encoding="utf-8") as out:
        out.write('\n[tools.script.kinds]\npath = "tools/kinds.lua"\n\n'
                  '[agents.searcher]\ndescription = "Searches only."\ntools = ["search"]\nsystem_prompt = "Search."\n')
    return config_mod.load(config_path)



def element(page: str, ident: str) -> str:
    """The text inside the element with id ``ident`` (unescaped)."""
    match = re.search(rf'id="{ident}"[^>]*>(.*?)</', page, re.S)
    assert match, f"no #{ident} on the page"
    return html.unescape(match.group(1))


def tag_of(page: str, ident: str) -> str:
    match = re.search(rf'<(input|select|textarea)\b[^>]*\bid="{ident}"[^>]*>', page)
    assert match, f"no control #{ident}"
    return match.group(0)


def test_the_tools_page_lists_every_tool_with_description_and_origin(tools_config, start_server):
    server = start_server(tools_config)
    with client(server) as ui:
        page = ui.get("/ui/tools")
        assert page.status_code == 200 and '<a href="/ui/tools" aria-current="page">Tools</a>' in page.text
        table = page.text[page.text.index('<table id="tools">'):]
        row = re.search(r'<a class="tool-link" href="/ui/tools/kinds">kinds</a></th>\s*<td>(.*?)</td>\s*<td>(.*?)</td>',
                        table, re.S)
        assert row, "the Lua tool has no row"
        assert row.group(1) == "Shows the &lt;b&gt;arguments&lt;/b&gt; it was given"  # escaped, not markup
        assert row.group(2) == "Lua: tools/kinds.lua"
        listed = set(re.findall(r'class="tool-link" href="/ui/tools/([^"]+)"', table))
        api = {tool["name"] for tool in ui.get("/tools/list").json()["tools"]}
        assert listed == api and "search" in listed
        assert re.search(r'href="/ui/tools/search">search</a></th>\s*<td>[^<]*</td>\s*<td>built-in</td>', table)


def test_the_form_has_a_labelled_control_of_the_right_type_per_property(tools_config, start_server):
    server = start_server(tools_config)
    with client(server) as ui:
        page = ui.get("/ui/tools/kinds").text
        assert 'id="tool-form"' in page
        for name in ("text", "count", "ratio", "loud", "colour", "extra"):
            assert f'<label for="arg-{name}">' in page
        text = tag_of(page, "arg-text")
        assert 'type="text"' in text and " required" in text and 'aria-describedby="arg-text-help"' in text
        count = tag_of(page, "arg-count")
        assert 'type="number"' in count and 'step="1"' in count and 'value="2"' in count
        assert 'type="number"' in tag_of(page, "arg-ratio") and 'step="any"' in tag_of(page, "arg-ratio")
        loud = tag_of(page, "arg-loud")
        assert 'type="checkbox"' in loud and "checked" not in loud
        assert tag_of(page, "arg-colour").startswith("<select")
        assert re.findall(r'<option value="([^"]*)"', page) == ["", "red", "green"]
        assert tag_of(page, "arg-extra").startswith("<textarea")
        search = ui.get("/ui/tools/search").text  # the built-in's schema: nullable types, bounds
        assert 'type="text"' in tag_of(search, "arg-query")
        limit = tag_of(search, "arg-limit")
        assert 'min="1"' in limit and 'max="100"' in limit
        assert tag_of(search, "arg-mode").startswith("<select") and 'type="checkbox"' in tag_of(search, "arg-explain")
        assert tag_of(search, "arg-filters").startswith("<textarea")


def test_a_property_holding_strings_is_a_textarea_one_per_line():
    schema = {"type": "object", "properties": {"tags": {"type": ["array", "null"], "items": {"type": "string"}},
                                               "nums": {"type": "array", "items": {"type": "integer"}}}}
    tags, nums = controls(schema)
    assert (tags.kind, nums.kind) == ("lines", "json")
    assert tags.value("a\n\n b \n", False) == (True, ["a", "b"])
    assert nums.value("[1, 2]", False) == (True, [1, 2])


def test_calling_a_tool_shows_its_result_and_timing_and_keeps_the_values(tools_config, start_server):
    server = start_server(tools_config)
    with client(server) as ui:
        token = csrf_of(ui.get("/ui/tools/kinds").text)
        done = ui.post("/ui/tools/kinds", data={"csrf": token, "text": "hi <there>", "count": "7", "ratio": "0.5",
                                                "loud": "true", "colour": "green", "extra": '{"key": "k1"}'})
        assert done.status_code == 200, done.text
        result = json.loads(element(done.text, "tool-result"))
        assert result == {"result": {"text": "HI <THERE>", "count": 7, "ratio": 0.5, "colour": "green", "key": "k1"}}
        assert result == ui.post("/tools/kinds", json={"text": "hi <there>", "count": 7, "ratio": 0.5, "loud": True,
                                                       "colour": "green", "extra": {"key": "k1"}}).json()
        assert re.fullmatch(r"\d+\.\d ms", element(done.text, "tool-timing"))
        assert "hi <there>" not in done.text and 'value="hi &lt;there&gt;"' in tag_of(done.text, "arg-text")
        assert "checked" in tag_of(done.text, "arg-loud") and "<option value=\"green\" selected>" in done.text
        defaults = ui.post("/ui/tools/kinds", data={"csrf": token, "text": "plain"})  # unset: the schema's default
        assert json.loads(element(defaults.text, "tool-result"))["result"] == {"text": "plain", "count": 2}
        found = ui.post("/ui/tools/search", data={"csrf": token, "query": "zebra", "mode": "keyword",
                                                  "filters": '{"tags": ["alpha"]}'})
        titles = [hit["title"] for hit in json.loads(element(found.text, "tool-result"))["results"]]
        assert titles == ["Alpha zebra"]


@pytest.mark.parametrize("fields, body", [
    ({"text": "x", "count": "many"}, {"text": "x", "count": "many"}),
    ({"text": "x", "count": "2.5"}, {"text": "x", "count": 2.5}),
    ({"count": "3"}, {"count": 3}),
    ({"text": "x", "colour": "blue"}, {"text": "x", "colour": "blue"}),
])
def test_a_bad_value_shows_the_apis_message(tools_config, start_server, fields, body):
    server = start_server(tools_config)
    with client(server) as ui:
        token = csrf_of(ui.get("/ui/tools/kinds").text)
        refused = ui.post("/ui/tools/kinds", data={"csrf": token, **fields})
        api = ui.post("/tools/kinds", json=body)
        assert api.status_code == 400 and refused.status_code == 400
        assert element(refused.text, "tool-error") == api.json()["error"]["message"]
        assert 'id="tool-result"' not in refused.text


def test_bad_json_in_a_json_field_names_the_argument(tools_config, start_server):
    server = start_server(tools_config)
    with client(server) as ui:
        token = csrf_of(ui.get("/ui/tools/kinds").text)
        refused = ui.post("/ui/tools/kinds", data={"csrf": token, "text": "x", "extra": "{not json"})
        assert refused.status_code == 400 and "'extra'" in element(refused.text, "tool-error")


def test_calls_are_refused_without_csrf_and_in_read_only_mode(tools_config, start_server):
    server = start_server(tools_config)
    with client(server) as ui:
        ui.get("/ui/tools/kinds")
        missing = ui.post("/ui/tools/kinds", data={"text": "x"})
        assert missing.status_code == 403 and "CSRF" in missing.text and 'id="tool-result"' not in missing.text
    tools_config.ui = UiConfig(read_only=True)
    server = start_server(tools_config)
    with client(server) as ui:
        page = ui.get("/ui/tools/kinds")
        assert page.status_code == 200 and 'id="arg-text"' in page.text and "Call kinds" not in page.text
        refused = ui.post("/ui/tools/kinds", data={"csrf": csrf_of(page.text), "text": "x"})
        assert refused.status_code == 403 and "read-only" in refused.text and 'id="tool-result"' not in refused.text


def test_a_server_scoped_to_an_agent_offers_only_its_tools(tools_config, start_server):
    server = start_server(tools_config, agent="searcher")
    with client(server) as ui:
        listed = re.findall(r'class="tool-link" href="/ui/tools/([^"]+)"', ui.get("/ui/tools").text)
        assert listed == ["search"]
        assert ui.get("/ui/tools/kinds").status_code == 404
        token = csrf_of(ui.get("/ui/tools/search").text)
        assert ui.post("/ui/tools/kinds", data={"csrf": token, "text": "x"}).status_code == 404


def hits(ui: httpx2.Client, **params: str) -> list[str]:
    page = ui.get("/ui/search", params={"q": "zebra", "mode": "keyword", **params})
    assert page.status_code == 200
    return sorted(html.unescape(t) for t in re.findall(r'<a href="/ui/doc\?[^"]*" dir="auto">([^<]*)</a>', page.text))


def test_search_filters_by_tag_and_date_and_keeps_them_in_the_form(tools_config, start_server):
    server = start_server(tools_config)
    with client(server) as ui:
        assert hits(ui) == ["Alpha zebra", "Beta zebra"]
        assert hits(ui, tag="alpha") == ["Alpha zebra"]
        assert hits(ui, tag="shared, alpha") == ["Alpha zebra", "Beta zebra"]
        assert hits(ui, tag="nothing") == []
        assert hits(ui, since="2024-01-01") == ["Beta zebra"]
        assert hits(ui, until="2020-01-15") == ["Alpha zebra"]  # the whole day: alpha is 18:30 that day
        assert hits(ui, since="2020-01-16", until="2025-06-01") == ["Beta zebra"]
        page = ui.get("/ui/search", params={"q": "zebra", "tag": "alpha", "since": "2019-02-03", "until": "2021-04-05"})
        assert 'value="alpha"' in tag_of(page.text, "tag")
        assert 'type="date"' in tag_of(page.text, "since") and 'value="2019-02-03"' in tag_of(page.text, "since")
        assert 'value="2021-04-05"' in tag_of(page.text, "until")
        partial = ui.get("/ui/search", params={"q": "zebra", "tag": "beta"}, headers={"HX-Request": "true"})
        assert "Beta zebra" in partial.text and "Alpha zebra" not in partial.text


def test_an_invalid_date_is_a_clear_message_not_a_server_error(tools_config, start_server):
    server = start_server(tools_config)
    with client(server) as ui:
        page = ui.get("/ui/search", params={"q": "zebra", "since": "2020-13-45"})
        assert page.status_code == 200
        assert "since: expected an ISO 8601 date or date-time such as 2026-01-31" in html.unescape(page.text)
        assert 'value="2020-13-45"' in tag_of(page.text, "since")


@pytest.mark.parametrize("enabled", [True, False])
def test_serve_http_prints_the_console_url_on_stderr_only(config_file: Path, child_env: dict[str, str], enabled):
    if not enabled:
        config_file.write_text(config_file.read_text(encoding="utf-8") + "\n[ui]\nenabled = false\n", encoding="utf-8")
    port = free_port()
    proc = subprocess.Popen([str(BIN / "ctx"), "--config", str(config_file), "serve", "--http", "--bind",
                             f"127.0.0.1:{port}"], env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx2.HTTPError:
                time.sleep(0.1)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=15)
    lines = err.decode().splitlines()
    url = f"http://127.0.0.1:{port}"
    assert f"  MCP endpoint: {url}/mcp" in lines, err.decode()
    assert (f"  Web console: {url}/ui/" in lines) is enabled
    assert out == b""
