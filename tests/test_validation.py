"""Untrusted JSON and arguments: what ``decode_json`` and ``check_text`` refuse, as client errors."""

from __future__ import annotations

import pytest

from context_harness.common.validation import MAX_JSON_DEPTH, check_text, decode_json, parse_search
from context_harness.errors import BadRequest


@pytest.mark.parametrize(("raw", "expected"), [
    (b'{"query": "x"}', {"query": "x"}),
    (b'\xef\xbb\xbf{"a": [1, 2.5, null]}', {"a": [1, 2.5, None]}),
    (b'"\\u00e9"', "é"),
])
def test_decode_json_accepts_json(raw: bytes, expected: object) -> None:
    assert decode_json(raw) == expected


@pytest.mark.parametrize(("raw", "says"), [
    (b"{", "not valid JSON"),
    (b"\xff{}", "not valid JSON"),
    (b'{"limit": NaN}', "not valid JSON"),
    (b"Infinity", "not valid JSON"),
    (b"[" * 100_000, "nested more than"),
    (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), "nested more than"),
    (b'{"id": "\\ud800"}', "lone UTF-16 surrogate"),
    (b'{"\\udfff": 1}', "lone UTF-16 surrogate"),
])
def test_decode_json_refuses_with_a_client_error(raw: bytes, says: str) -> None:
    with pytest.raises(BadRequest) as caught:
        decode_json(raw, "the body")
    assert caught.value.message.startswith("the body: ") and says in caught.value.message


def test_arguments_with_a_lone_surrogate_are_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="surrogate"):
        parse_search({"query": "lua", "filters": {"source": "\udcff"}})  # a command line's undecodable byte
    check_text({"query": "é 🙂 \u202e"}, "fine")
