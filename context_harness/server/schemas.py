"""Tool schemas as published over MCP: portable to clients that map JSON Schema onto a single-``type``
dialect (Gemini function declarations, the OpenAPI 3.0 subset), checked by the MCP Inspector's
``--strict`` mode.

The models' own schemas (``tools.builtin.schema_of``) write a nullable field as ``type: [X, "null"]``
and put ``null`` in its ``enum``. Published here:

- **input schemas** say nothing of ``null``: an optional field is simply not required
  (``type: X``, ``enum`` without ``null``, no ``default: null``). The tools validate arguments
  themselves, so a client that still sends an explicit ``null`` for an optional field gets what it
  got before: the field's default.
- **output schemas** keep ``null`` where a result can hold it, spelled the portable way:
  ``anyOf: [{type: X, ...}, {type: "null"}]``.
- a value that may be anything (a Lua tool's ``result``) is spelled as ``anyOf`` over every JSON
  type, not as a schema without a type keyword.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

# Keywords that describe a value rather than constrain it: they stay on the outer node when a
# type union is split into ``anyOf`` branches.
ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
                         "$comment"})
# Keywords whose value is one subschema, a map of them, or a list of them.
ONE_SCHEMA = ("items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
              "unevaluatedProperties", "unevaluatedItems", "additionalItems")
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
# What makes a schema constrain its value at all (the Inspector's list, abridged to what we produce).
CONSTRAINING = frozenset({"type", "enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref", "properties",
                          "items", "required", "additionalProperties", "pattern", "format", "minimum", "maximum",
                          "minLength", "maxLength", "minItems", "maxItems", "prefixItems", "patternProperties"})
ANY_VALUE = [{"type": kind} for kind in ("object", "array", "string", "number", "boolean", "null")]


def portable_input(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a tool's arguments) without any mention of ``null``; see the module docstring."""
    return _cached(json.dumps(schema), "input")


def portable_output(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """``schema`` (a tool's result) with nullable fields as ``anyOf`` branches; see the module docstring."""
    return None if schema is None else _cached(json.dumps(schema), "output")


@lru_cache(maxsize=256)
def _cached_text(text: str, kind: str) -> str:
    node = json.loads(text)
    return json.dumps(_walk(node, kind == "input"))


def _cached(text: str, kind: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(_cached_text(text, kind))
    return result


def _walk(node: Any, is_input: bool) -> Any:
    """One schema node, its subschemas first."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ONE_SCHEMA:
        if isinstance(out.get(key), dict):
            out[key] = _walk(out[key], is_input)
    for key in SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _walk(sub, is_input) for name, sub in out[key].items()}
    for key in SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_walk(sub, is_input) for sub in out[key]]
    out = _without_null(out) if is_input else _null_as_branch(out)
    if not CONSTRAINING & out.keys():
        out["anyOf"] = [dict(branch) for branch in ANY_VALUE if not (is_input and branch["type"] == "null")]
    return out


def _without_null(node: dict[str, Any]) -> dict[str, Any]:
    """An input node that no longer admits ``null``: from its types, enum, default and branches."""
    kinds = node.get("type")
    if isinstance(kinds, list):
        kinds = [k for k in kinds if k != "null"] or ["null"]
        node["type"] = kinds[0] if len(kinds) == 1 else kinds
    if isinstance(node.get("enum"), list):
        node["enum"] = [v for v in node["enum"] if v is not None]
    if "default" in node and node["default"] is None:
        del node["default"]
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list) and {"type": "null"} in branches:
            kept = [b for b in branches if b != {"type": "null"}]
            if len(kept) == 1 and isinstance(kept[0], dict) and not kept[0].keys() & node.keys() - {key}:
                del node[key]
                node.update(kept[0])
            else:
                node[key] = kept
    if isinstance(node.get("type"), list):  # several non-null types left: one branch each
        return _split(node)
    return node


def _null_as_branch(node: dict[str, Any]) -> dict[str, Any]:
    """An output node whose ``type`` is a list, as ``anyOf`` branches of one type each."""
    return _split(node) if isinstance(node.get("type"), list) else node


def _split(node: dict[str, Any]) -> dict[str, Any]:
    """``{type: [A, B], ...constraints}`` -> ``{anyOf: [{type: A, ...}, {type: B, ...}]}``; annotations stay
    outside, ``enum`` goes to the non-null branches (a null branch exists when the enum admits null)."""
    outer = {k: v for k, v in node.items() if k in ANNOTATIONS}
    constraints = {k: v for k, v in node.items() if k not in ANNOTATIONS and k != "type"}
    enum = constraints.pop("enum", None)
    branches = []
    for kind in node["type"]:
        if kind == "null":
            if enum is None or None in enum:
                branches.append({"type": "null"})
            continue
        branch = {"type": kind, **constraints}
        if enum is not None:
            branch["enum"] = [v for v in enum if v is not None]
        branches.append(branch)
    split = {**outer, "anyOf": branches} if len(branches) > 1 else {**outer, **branches[0]}
    if "anyOf" in constraints:  # the node had branches of its own too: both must hold
        for branch in branches:
            branch.pop("anyOf", None)
        split = {**outer, "allOf": [{"anyOf": branches}, {"anyOf": constraints["anyOf"]}]}
    return split


__all__ = ["portable_input", "portable_output"]
