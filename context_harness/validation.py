"""Turn untrusted arguments into request models, the same way for MCP, REST and the CLI."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from context_harness.errors import BadRequest
from context_harness.models import GetRequest, SearchRequest

M = TypeVar("M", bound=BaseModel)


FRIENDLY = {"dict_type": "expected an object", "model_type": "expected an object",
            "string_type": "expected a string", "list_type": "expected an array"}


def describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            parts.append(f"{where}: unknown argument")
        elif err["type"] == "missing":
            parts.append(f"{where}: required")
        elif err["type"] in FRIENDLY:
            parts.append(f"{where}: {FRIENDLY[err['type']]}")
        else:
            message = err["msg"].removeprefix("Value error, ")
            parts.append(f"{where}: {message}")
    return "; ".join(parts)


def parse(model: type[M], data: Any) -> M:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise BadRequest("arguments must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(describe(exc)) from None


def parse_search(data: Any) -> SearchRequest:
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if v is not None}
    return parse(SearchRequest, data)


def parse_get(data: Any) -> GetRequest:
    return parse(GetRequest, data)
