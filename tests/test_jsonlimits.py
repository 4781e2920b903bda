"""``common.jsonlimits``: JSON nesting bounded before ``json`` recurses. The depth it finds is the
depth ``json`` builds (hypothesis over JSON values, strings full of brackets, quotes and escapes), a
text past the limit is refused wherever its deep part is, and the scan stays linear."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_harness.common import jsonlimits
from context_harness.common.jsonlimits import TooDeep, deeper_than

TRICKY = st.text(alphabet=st.sampled_from('[]{}"\\, ab\u00e9\u2603\n'), max_size=12)
VALUES = st.recursive(st.none() | st.booleans() | st.integers() | TRICKY,
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
                      max_leaves=60)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=400, deadline=None)
@given(VALUES, st.integers(min_value=0, max_value=8), st.booleans())
def test_the_scan_agrees_with_the_depth_json_builds(value: Any, limit: int, as_bytes: bool) -> None:
    text = json.dumps(value, ensure_ascii=False)
    data: str | bytes = text.encode() if as_bytes else text
    found = deeper_than(data, limit)
    assert (found is None) == (depth(value) <= limit)
    if found is not None:
        assert data[found:found + 1] in ("[", "{", b"[", b"{")
        with pytest.raises(TooDeep):
            jsonlimits.loads(data, max_depth=limit)
    else:
        assert jsonlimits.loads(data, max_depth=limit) == value


def test_a_100000_deep_text_is_refused_naming_the_limit_and_where() -> None:
    for text in ("[" * 100_000, "[" * 100_000 + "]" * 100_000, '{"a":' * 100_000, '{"x": "é", "y": ' + "[" * 70):
        with pytest.raises(TooDeep) as caught:
            jsonlimits.loads(text)
        assert caught.value.msg == "nested more than 64 levels deep" and caught.value.limit == 64
        assert text[caught.value.pos] in "[{"
        assert isinstance(caught.value, json.JSONDecodeError)  # what a caller of json already catches


def test_brackets_in_strings_after_the_value_or_unterminated_are_left_to_json() -> None:
    assert jsonlimits.loads(json.dumps({"a": "[" * 10_000, "b": "\\\"{" * 1000})) == {
        "a": "[" * 10_000, "b": "\\\"{" * 1000}
    for text in ("[] " + "[" * 1000, '["' + "[" * 1000, '"\\"' + "[" * 1000):  # extra data; unterminated strings
        with pytest.raises(json.JSONDecodeError) as caught:
            jsonlimits.loads(text)
        assert not isinstance(caught.value, TooDeep)


def test_utf16_bytes_are_scanned_as_text() -> None:
    assert deeper_than(("[" * 65 + "]" * 65).encode("utf-16"), 64) is not None
    assert jsonlimits.loads(json.dumps([[1]]).encode("utf-16")) == [[1]]


def test_the_scan_is_linear_on_a_mebibyte() -> None:
    hostile = {
        "pairs": "[" + ",".join(["[]"] * 350_000) + "]",
        "towers": "[" + ",".join(["[" * 62 + "]" * 62] * 8000) + "]",
        "objects": json.dumps([{"k": [1, {"x": "y\\\"["}]} for _ in range(40_000)]),
        "deep": "[" * 1_000_000,
    }
    for name, text in hostile.items():
        began = time.perf_counter()
        deeper_than(text, 64)
        took = time.perf_counter() - began
        assert took < 1.0, f"{name}: {took:.2f} s"  # ~0.05 s here
