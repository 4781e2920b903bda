"""Hostile input for the property-based batteries (``tests/server/test_hostile_*.py``): hypothesis
strategies for values an attacker or a broken client sends, and the checks every answer must pass.

Values: wrong types, missing and extra fields, huge strings, deep nesting, NUL bytes, lone
surrogates (what ``"\\ud800"`` in JSON decodes to), odd Unicode (bidi overrides, combining marks,
astral characters), ``../`` ids, query-parser syntax, huge and negative integers, NaN and infinities.
"""

from __future__ import annotations

import logging
import os
import string
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

CASES = int(os.environ.get("CTX_HOSTILE_CASES", "10000"))
"""Examples per surface: issue 16 asks for at least 10,000 (``CTX_HOSTILE_CASES`` lowers it while iterating)."""

BATTERY = settings(max_examples=CASES, deadline=None, derandomize=True, database=None, print_blob=True,
                   suppress_health_check=list(HealthCheck))
"""Fixed derandomized runs (a failure replays), no example database written into the checkout."""

# Codes a client may cause (errors.py's table), and those a Lua script's own failure gives.
CLIENT_CODES = {"bad_request", "not_found", "embeddings_disabled", "not_configured", "timeout"}
SCRIPT_CODES = {"tool_error", "agent_error"}

TRACEBACK_MARKS = ("Traceback (most recent call last)", 'File "/', ".py\", line ", "site-packages",
                   "<module>")

NASTY = [
    "", " ", "\x00", "a\x00b", "\x00" * 64, "../../../../etc/passwd", "..", "../", "..\\..\\windows\\win.ini",
    "%2e%2e%2f%2e%2e%2f", "/etc/passwd", "file:///etc/passwd", "C:\\Windows", "\\\\server\\share",
    "\ud800", "a\udfffb", "\ufeff", "\u202eevil\u202c", "e\u0301\u0301\u0301", "\U0001f600" * 3, "𝕳𝖊𝖑𝖑𝖔",
    "\u2028\u2029", "\r\n\r\n", "\t", "\x1b[31mred", "\x7f", "\uffff", "\U0010ffff", "ﷺ", "ǅ", "İ",
    '"', "'", "\\", "*", "?", "~", "^", "title:x", "body:", "AND", "OR NOT", "((((", "))))", "[a TO b]",
    "{!}", '"unclosed', "+-&&||!(){}[]^\"~*?:\\/", "NaN", "null", "true", "[]", "{}", "0", "-1",
    "1e309", "${HOME}", "$(id)", "`id`", "<script>alert(1)</script>", "'; DROP TABLE documents; --",
    "%s%s%s%n", "{0}{1}", "{{language}}", "x" * 201, "ctx://documents/../../x", "agent://../x",
]

_chars = st.characters(categories=["L", "M", "N", "P", "S", "Z", "C"])  # every code point, surrogates too
texts = st.one_of(
    st.text(_chars, max_size=40),
    st.text(string.printable, max_size=40),
    st.sampled_from(NASTY),
    st.lists(st.sampled_from(NASTY), min_size=1, max_size=6).map("".join),
)
huge_texts = st.integers(1_000, 120_000).flatmap(
    lambda n: st.sampled_from(["a", "é", "\x00", "\U0001f600", "\ud800", "lua ", "../"]).map(lambda c: c * (n // len(c))))
integers = st.one_of(st.integers(-3, 300), st.sampled_from([2**31, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30]),
                     st.integers())
floats = st.one_of(st.floats(), st.sampled_from([0.5, -0.0, 1e308, float("nan"), float("inf"), float("-inf")]))
scalars = st.one_of(st.none(), st.booleans(), integers, floats, texts)
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)), max_leaves=12)


def nest(depth: int, leaf: Any = "x") -> Any:
    """``depth`` levels of alternating lists and objects around ``leaf``."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


deep_values = st.integers(20, 150).map(nest)
anything = st.one_of(json_values, json_values, json_values, huge_texts, deep_values)


def for_schema(node: dict[str, Any], plausible: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values for one JSON Schema property: often plausible (enum members, small numbers, words, the
    values in ``plausible``), so deeper code runs, and otherwise anything at all."""
    options: list[st.SearchStrategy[Any]] = []
    if "enum" in node:
        options.append(st.sampled_from(node["enum"]))
    kinds = node.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    for option in node.get("anyOf", []):
        kinds.append(option.get("type"))
    if "integer" in kinds or "number" in kinds:
        options.append(integers)
    if "string" in kinds:
        options.append(texts)
    if "array" in kinds:
        options.append(st.lists(texts, max_size=4))
    if "object" in kinds:
        inner = node.get("properties") or {}
        options.append(objects(inner, plausible) if inner else st.dictionaries(texts, json_values, max_size=4))
    return st.one_of(*options, anything) if options else anything


def objects(properties: dict[str, Any], plausible: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """An object over ``properties``: some fields present (plausible or hostile), sometimes extra ones."""
    fields = {name: (st.one_of(st.sampled_from(plausible[name]), for_schema(node, plausible))
                     if plausible.get(name) else for_schema(node, plausible))
              for name, node in properties.items()}
    chosen = st.fixed_dictionaries({}, optional=fields) if fields else st.just({})
    extra = st.dictionaries(texts, json_values, max_size=2)
    return st.tuples(chosen, st.booleans(), extra).map(lambda t: {**t[2], **t[0]} if t[1] else t[0])


def mostly(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any], one_in: int = 5) -> st.SearchStrategy[Any]:
    """``common``, and ``rare`` about once in ``one_in`` draws (``one_of`` would dedupe repeats)."""
    return st.integers(1, one_in).flatmap(lambda i: rare if i == one_in else common)


def arguments_for(schema: dict[str, Any], plausible: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Arguments for a tool with input ``schema``: mostly objects over its properties, sometimes any JSON."""
    return mostly(objects(schema.get("properties") or {}, plausible), anything)


def wire_safe(value: Any) -> Any:
    """``value`` with lone surrogates replaced by U+FFFD: what the MCP SDK's JSON can carry (its
    parser refuses a lone ``\\ud800`` escape, so the raw HTTP battery sends those instead)."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [wire_safe(v) for v in value]
    if isinstance(value, dict):
        return {wire_safe(k): wire_safe(v) for k, v in value.items()}
    return value


# -- checks ------------------------------------------------------------------------------------------

def no_traceback(text: str, where: str) -> None:
    for mark in TRACEBACK_MARKS:
        assert mark not in text, f"{where}: traceback-like text {mark!r} in {text[:500]!r}"


class ErrorLog(logging.Handler):
    """Records ERROR (and worse) log records: an unexpected exception is logged there before it
    becomes ``internal``, so an empty record list is a second proof that none happened."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> ErrorLog:
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self)

    def check(self) -> None:
        if self.records:
            first = self.records[0]
            detail = logging.Formatter().format(first)
            self.records.clear()
            raise AssertionError(f"the server logged an error: {detail[:3000]}")


class Counter:
    """How many cases a battery ran, and how its answers split by outcome (for RELIABILITY.md)."""

    def __init__(self) -> None:
        self.cases = 0
        self.outcomes: dict[str, int] = {}

    def count(self, outcome: str) -> None:
        self.cases += 1
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def summary(self) -> str:
        top = sorted(self.outcomes.items(), key=lambda kv: -kv[1])
        return f"{self.cases} cases: " + ", ".join(f"{k} {v}" for k, v in top)


Check = Callable[[Any], None]

__all__ = ["BATTERY", "CASES", "CLIENT_CODES", "NASTY", "SCRIPT_CODES", "Counter", "ErrorLog", "anything",
           "arguments_for", "deep_values", "for_schema", "huge_texts", "mostly", "integers", "json_values", "nest",
           "no_traceback", "objects", "scalars", "texts", "wire_safe"]
