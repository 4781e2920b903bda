"""Published tool schemas are flat (no $ref, no anyOf-with-null) yet accept exactly what the models do."""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import BaseModel

from context_harness.models import DocumentOut, SearchRequest, SearchResponse, SourcesResponse
from context_harness.tools.builtin import flat_schema, schema_of

RESULT = {"id": "a1", "score": 1.5, "title": None, "source": "filesystem:docs", "source_id": "a.md",
          "updated_at": None, "snippet": "…", "source_url": None}
SEARCH_RESULTS = [
    {"results": []},
    {"results": [RESULT]},
    {"results": [{**RESULT, "explain": None}]},
    {"results": [{**RESULT, "explain": {"keyword_score": 2.0, "keyword_rank": 1, "notes": ["x"]}}]},
    {"results": [{**RESULT, "explain": {"keyword_rank": "first"}}]},  # invalid
    {"results": [{**RESULT, "title": 7}]},  # invalid
    {"results": [{**RESULT, "explain": []}]},  # invalid
    {},  # invalid
]
SEARCH_ARGUMENTS = [
    {"query": "x"}, {"query": "x", "mode": None}, {"query": "x", "mode": "hybrid"}, {"query": "x", "mode": "fuzzy"},
    {"query": "x", "limit": None}, {"query": "x", "limit": 0}, {"query": "x", "filters": None},
    {"query": "x", "filters": {"tags": ["a"], "since": None}}, {"query": "x", "filters": {"tags": "a"}},
    {"query": "x", "filters": {"colour": "red"}}, {"query": ""}, {"mode": "keyword"},
]


@pytest.mark.parametrize(("model", "mode", "instances"), [
    (SearchResponse, "serialization", SEARCH_RESULTS),
    (SearchRequest, "validation", SEARCH_ARGUMENTS),
])
def test_flat_schema_accepts_exactly_what_the_original_does(model: type[BaseModel], mode: str, instances: list) -> None:
    original = model.model_json_schema(mode=mode)  # type: ignore[arg-type]
    flat = schema_of(model, mode)
    verdicts = [(jsonschema.Draft202012Validator(original).is_valid(i), jsonschema.Draft202012Validator(flat).is_valid(i))
                for i in instances]
    assert all(a == b for a, b in verdicts), verdicts
    assert {a for a, _ in verdicts} == {True, False}  # the instances exercise both outcomes


@pytest.mark.parametrize("model", [SearchResponse, SearchRequest, DocumentOut, SourcesResponse])
def test_published_schemas_have_no_refs_or_nullable_unions(model: type[BaseModel]) -> None:
    text = json.dumps(schema_of(model, "serialization"))
    assert "$ref" not in text and '{"type": "null"}' not in text


def test_recursive_definitions_keep_their_refs() -> None:
    schema = {"$defs": {"Node": {"type": "object", "properties": {"child": {"anyOf": [{"$ref": "#/$defs/Node"},
                                                                                        {"type": "null"}]}}}},
              "$ref": "#/$defs/Node"}
    flat = flat_schema(schema)
    validator = jsonschema.Draft202012Validator(flat)
    assert validator.is_valid({"child": {"child": None}})
    assert not validator.is_valid({"child": {"child": 3}})
