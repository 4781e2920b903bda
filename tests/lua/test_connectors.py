"""Lua connectors: items, validation (one warning per invalid item), timestamps, errors, timeouts."""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import Any

import pytest

from context_harness.connectors.base import Connector, ScanReport
from context_harness.errors import Timeout, ToolError
from context_harness.lua.connector import parse_timestamp

UTC = dt.UTC

GOOD = """
connector = {}
function connector.scan(config)
  return {
    {source_id = "a", body = "Alpha body", title = "Alpha", author = "ann", source_url = "https://x/a",
     content_type = "text/plain", metadata = {n = 1}, tags = {"x", "y"},
     created_at = 1767225600, updated_at = "2026-01-05T10:00:00Z"},
    {source_id = 42, body = "Numeric id", updated_at = "2026-01-05T12:00:00+02:00", metadata_json = '{"m": true}'},
    {source_id = "c", body = "Prefix " .. config.prefix, tags = {}, metadata = {}},
  }
end
"""


def test_scan_yields_candidates_with_items(make_connector: Any) -> None:
    conn = make_connector(GOOD, name="api", prefix="from config")
    assert isinstance(conn, Connector)
    assert conn.type == "script" and conn.name == "api" and conn.label == "script:api"
    report = ScanReport()
    candidates = list(conn.scan(report))
    assert [c.source_id for c in candidates] == ["a", "42", "c"]
    assert all(c.fingerprint is None for c in candidates)
    a, b, c = (cand.load() for cand in candidates)
    assert a.title == "Alpha" and a.author == "ann" and a.source_url == "https://x/a"
    assert a.content_type == "text/plain" and a.metadata == {"n": 1} and a.tags == ["x", "y"]
    assert a.created_at == dt.datetime(2026, 1, 1, tzinfo=UTC)
    assert a.updated_at == dt.datetime(2026, 1, 5, 10, tzinfo=UTC)
    assert b.updated_at == dt.datetime(2026, 1, 5, 10, tzinfo=UTC) and b.metadata == {"m": True}
    assert b.content_type == "text/markdown" and b.title is None
    assert c.body == "Prefix from config" and c.tags == [] and c.metadata == {}
    assert report.skipped == {}


def test_invalid_items_skipped_with_one_warning_each(make_connector: Any, caplog: pytest.LogCaptureFixture) -> None:
    conn = make_connector("""
connector = {}
function connector.scan()
  return {
    {source_id = "ok", body = "fine"},
    {body = "no id"},
    {source_id = "nobody"},
    {source_id = "empty", body = "   "},
    {source_id = "badtime", body = "x", updated_at = "yesterday"},
    {source_id = "badtags", body = "x", tags = {1, 2}},
    {source_id = "fn", body = "x", metadata = {f = print}},
    "not a table",
    {source_id = "ok", body = "duplicate"},
    {source_id = "ok2", body = "fine too", title = {}},
  }
end
""", name="bad")
    caplog.set_level(logging.WARNING, logger="context_harness.lua")
    report = ScanReport()
    items = [c.load() for c in conn.scan(report)]
    assert [i.source_id for i in items] == ["ok"]
    assert report.skipped == {"invalid_item": 8, "duplicate_id": 1}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 9 and all(w.startswith("script:bad: skipped item") for w in warnings)
    joined = "\n".join(report.warnings)
    for fragment in ["missing source_id", "missing body", "empty body", "'yesterday' is not an RFC 3339",
                     "tags must be an array of strings", "function value", "title must be a string",
                     "repeats an earlier item"]:
        assert fragment in joined


@pytest.mark.parametrize(("source", "message"), [
    ("connector = {} function connector.scan() return 'x' end", "must return an array of items, not a string"),
    ("connector = {} function connector.scan() return nil end", "must return an array of items, not nil"),
    ("connector = {} function connector.scan() error('api down') end", "failed: .*api down"),
])
def test_scan_failures_are_tool_errors(make_connector: Any, source: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        list(make_connector(source).scan(ScanReport()))


def test_scan_timeout_and_recovery(make_connector: Any) -> None:
    conn = make_connector("""
connector = {} calls = 0
function connector.scan() calls = calls + 1 if calls == 1 then while true do end end return {{source_id = "a", body = "b"}} end
""", timeout=0.4)
    started = time.monotonic()
    with pytest.raises(Timeout, match="Lua connector 'c' timed out after 0.4 s"):
        list(conn.scan(ScanReport()))
    assert time.monotonic() - started < 1.4
    assert [c.source_id for c in conn.scan(ScanReport())] == ["a"]


def test_connector_default_timeout_is_300s(make_connector: Any) -> None:
    conn = make_connector("connector = {} function connector.scan() return {} end")
    assert conn.script.timeout == 300.0
    assert list(conn.scan(ScanReport())) == []


def test_return_connector_form(make_connector: Any) -> None:
    conn = make_connector("local c = {} function c.scan() return {{source_id = 'x', body = 'y'}} end return c")
    assert [c.source_id for c in conn.scan(ScanReport())] == ["x"]


def test_ten_thousand_items(make_connector: Any) -> None:
    conn = make_connector("""
connector = {}
function connector.scan()
  local items = {}
  for i = 1, 10000 do
    items[i] = {source_id = "doc-" .. i, title = "Doc " .. i, body = "Body of document " .. i,
                updated_at = 1767225600 + i, tags = {"bulk"}, metadata = {i = i}}
  end
  return items
end
""")
    started = time.monotonic()
    items = conn.fetch()
    assert len(items) == 10_000 and items[-1].metadata == {"i": 10000}
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-01-05T10:00:00Z", dt.datetime(2026, 1, 5, 10, tzinfo=UTC)),
    ("2026-01-05T10:00:00.5+01:00", dt.datetime(2026, 1, 5, 9, 0, 0, 500000, tzinfo=UTC)),
    ("2026-01-05 10:00:00", dt.datetime(2026, 1, 5, 10, tzinfo=UTC)),
    ("2026-01-05", dt.datetime(2026, 1, 5, tzinfo=UTC)),
    (0, dt.datetime(1970, 1, 1, tzinfo=UTC)),
    (1767225600.5, dt.datetime(2026, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)),
    (None, None),
])
def test_parse_timestamp(value: Any, expected: Any) -> None:
    assert parse_timestamp(value, "updated_at") == expected
