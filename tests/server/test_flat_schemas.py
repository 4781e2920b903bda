"""Published tool schemas are flat (no $ref but for a definition a result uses more than once, no
anyOf-with-null) and compact (no titles; results without descriptions or defaults), yet accept exactly what
the models do."""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import BaseModel, Field

from context_harness.models import (
    DocumentOut,
    RelatedResponse,
    SearchRequest,
    SearchResponse,
    SearchResult,
    SourcesResponse,
)
from context_harness.tools.builtin import flat_schema, schema_of

RESULT = {"id": "a1", "score": 1.5, "title": None, "source": "filesystem:docs", "source_id": "a.md",
          "updated_at": None, "snippet": "…", "source_url": None}
SEARCH_RESULTS = [
    {"results": []},
    {"results": [RESULT]},
    {"results": [{**RESULT, "explain": {"keyword_score": 2.0, "keyword_rank": 1, "notes": ["x"]}}]},
    {"results": [{**RESULT, "explain": {"keyword_rank": "first"}}]},  # invalid
    {"results": [{**RESULT, "title": 7}]},  # invalid
    {"results": [{**RESULT, "explain": []}]},  # invalid
    {},  # invalid
]
RELATED_ITEM = {"id": "b2", "source": "filesystem:docs", "source_id": "b.md", "why": "links_to"}
RELATED_RESULTS = [
    {"id": "a1", "links_to": [RELATED_ITEM], "linked_from": [], "similar": [{**RELATED_ITEM, "score": 0.5}],
     "unresolved": []},
    {"id": "a1", "links_to": [], "linked_from": [{**RELATED_ITEM, "why": "nearby"}], "similar": [],
     "unresolved": []},  # invalid
    {"id": "a1", "links_to": [], "linked_from": [], "similar": [{**RELATED_ITEM, "score": "high"}],
     "unresolved": []},  # invalid
]
SEARCH_ARGUMENTS = [
    {"query": "x"}, {"query": "x", "mode": None}, {"query": "x", "mode": "hybrid"}, {"query": "x", "mode": "fuzzy"},
    {"query": "x", "limit": None}, {"query": "x", "limit": 0}, {"query": "x", "filters": None},
    {"query": "x", "filters": {"tags": ["a"], "since": None}}, {"query": "x", "filters": {"tags": "a"}},
    {"query": "x", "filters": {"colour": "red"}}, {"query": ""}, {"mode": "keyword"},
]


@pytest.mark.parametrize(("model", "mode", "instances"), [
    (SearchResponse, "serialization", SEARCH_RESULTS),
    (RelatedResponse, "serialization", RELATED_RESULTS),
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


def test_a_definition_used_more_than_once_is_shared() -> None:
    schema = schema_of(RelatedResponse, "serialization")
    assert list(schema["$defs"]) == ["RelatedItem"]
    assert json.dumps(schema).count('"#/$defs/RelatedItem"') == 3  # links_to, linked_from, similar
    assert "$defs" not in schema_of(RelatedResponse)  # arguments' schemas stay inline (single-type dialects)


def test_a_field_left_out_when_none_is_not_published_as_nullable() -> None:
    payload = SearchResponse(results=[SearchResult(**RESULT)]).model_dump(mode="json")
    assert "explain" not in payload["results"][0] and "explain" not in payload  # never sent as null
    validator = jsonschema.Draft202012Validator(schema_of(SearchResponse, "serialization"))
    assert validator.is_valid(payload)
    assert not validator.is_valid({"results": [{**RESULT, "explain": None}]})


def test_results_say_structure_only_and_arguments_keep_their_descriptions() -> None:
    def keywords(node: object) -> set[str]:
        if isinstance(node, list):
            return set().union(*map(keywords, node)) if node else set()
        if not isinstance(node, dict):
            return set()
        own = {k for k in node if k not in ("properties", "$defs")}
        subs = [*node.get("properties", {}).values(), *node.get("$defs", {}).values()]
        return own | set().union(*(keywords(v) for k, v in node.items() if k not in ("properties", "$defs")),
                                 *map(keywords, subs))

    for model in (SearchResponse, DocumentOut, SourcesResponse, RelatedResponse):
        assert not {"title", "description", "default"} & keywords(schema_of(model, "serialization")), model
    arguments = schema_of(SearchRequest)
    assert "title" not in keywords(arguments) and "description" not in arguments  # no docstring of ours
    assert all(node.get("description") for node in arguments["properties"].values())
    assert "title" in SearchResult.model_fields  # a property named title is a name, not the keyword
    assert "title" in schema_of(SearchResponse, "serialization")["properties"]["results"]["items"]["properties"]


def test_values_are_left_alone() -> None:
    class Options(BaseModel):
        labels: dict[str, str] = Field(default={"title": "kept", "description": "kept"}, description="Labels.")
        kind: str = Field(default="a", json_schema_extra={"enum": ["title", "default"]}, description="Kind.")

    labels = schema_of(Options)["properties"]["labels"]
    assert labels["default"] == {"title": "kept", "description": "kept"} and "title" not in labels
    assert schema_of(Options)["properties"]["kind"]["enum"] == ["title", "default"]


def test_recursive_definitions_keep_their_refs() -> None:
    schema = {"$defs": {"Node": {"type": "object", "properties": {"child": {"anyOf": [{"$ref": "#/$defs/Node"},
                                                                                        {"type": "null"}]}}}},
              "$ref": "#/$defs/Node"}
    flat = flat_schema(schema)
    validator = jsonschema.Draft202012Validator(flat)
    assert validator.is_valid({"child": {"child": None}})
    assert not validator.is_valid({"child": {"child": 3}})
