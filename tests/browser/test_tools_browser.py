"""The console's tools page and search filters in headless Chromium against the real ``ctx serve
--http``: a Lua tool called from the form its schema generates (text, number, select, checkbox), its
error shown; a tag filter narrowing the results."""

from __future__ import annotations

import json
from typing import Any

from browser.console import Console

# A Lua tool with one control of each kind the form generates.
SIGNAL_LUA = """
tool = {
  description = "Signal a boat: repeat a word, loud or not",
  parameters = {
    { name = "word", type = "string", required = true, description = "What to signal" },
    { name = "times", type = "integer", default = 1, description = "How many times" },
    { name = "flag", type = "string", default = "red", enum = { "red", "green" }, description = "Which flag" },
    { name = "loud", type = "boolean", default = false, description = "Upper-case it" },
  },
}
function tool.execute(params, context)
  if params.times < 1 then error("times must be at least 1") end
  local words = {}
  for i = 1, params.times do words[i] = params.word end
  local said = table.concat(words, " ")
  if params.loud then said = said:upper() end
  return { said = said, flag = params.flag }
end
"""
SERVE = {"embedding": "disabled", "files": {"tools/signal.lua": SIGNAL_LUA},
         "extra": '[tools.script.signal]\npath = "tools/signal.lua"\n'}


def test_a_tool_is_called_from_its_form(page: Any, console: Console, shoot) -> None:
    page.click('nav a[href="/ui/tools"]')
    page.wait_for_url(f"{console.url}/ui/tools")
    names = page.locator("table#tools a.tool-link").all_inner_texts()
    assert "signal" in names and "search" in names
    shoot(page, "tools")
    page.locator("table#tools a.tool-link", has_text="signal").click()
    page.wait_for_url(f"{console.url}/ui/tools/signal")
    assert page.get_attribute("#arg-times", "type") == "number"
    assert page.get_attribute("#arg-loud", "type") == "checkbox"
    assert page.locator("#arg-flag option").all_inner_texts()[-2:] == ["red", "green"]
    page.fill("#arg-word", "ahoy")
    page.fill("#arg-times", "2")
    page.select_option("#arg-flag", "green")
    page.check("#arg-loud")
    page.locator("#tool-form button[type=submit]").click()
    page.locator("pre#tool-result").wait_for()
    assert json.loads(page.locator("pre#tool-result").inner_text()) == {"result": {"said": "AHOY AHOY", "flag": "green"}}
    assert float(page.locator("#tool-timing").inner_text().split()[0]) >= 0
    shoot(page, "tool")
    page.fill("#arg-times", "0")
    page.locator("#tool-form button[type=submit]").click()
    page.locator("#tool-error").wait_for()
    assert "times must be at least 1" in page.locator("#tool-error").inner_text()


def hit_titles(page: Any) -> list[str]:
    return page.locator("#results li.hit > a").all_inner_texts()


def test_a_tag_filter_narrows_the_results(page: Any) -> None:
    page.fill("#q", "search")
    page.select_option("#mode", "keyword")
    page.click("form.search button[type=submit]")
    page.locator("#results li.hit").first.wait_for()
    assert {"Tantivy notes", "Lua sandbox"} <= set(hit_titles(page))
    page.fill("#tag", "lua")
    page.click("form.search button[type=submit]")
    page.wait_for_function("() => document.querySelectorAll('#results li.hit').length === 1")
    assert hit_titles(page) == ["Lua sandbox"]
    assert "tag=lua" in page.url
    page.fill("#tag", "no-such-tag")
    page.click("form.search button[type=submit]")
    page.wait_for_function("() => document.querySelectorAll('#results li.hit').length === 0")
