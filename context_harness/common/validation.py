"""Turn untrusted arguments into validated ones, the same way for MCP, REST and the CLI: pydantic
request models (``parse``) and arguments declared by scripts and agents (``check_declared``)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from context_harness.common import jsonlimits
from context_harness.errors import BadRequest
from context_harness.models import GetRequest, RecentRequest, RelatedRequest, SearchRequest

M = TypeVar("M", bound=BaseModel)


def plain_int(text: str | None) -> int | None:
    """``text`` as a whole number when it is ASCII digits and nothing else, else None (a cursor, a port, a
    Content-Length). ``str.isdigit`` alone also accepts digits such as '²' that ``int`` refuses."""
    return int(text) if text and text.isascii() and text.isdigit() else None


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
    check_text(data, "the arguments")
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


def parse_recent(data: Any) -> RecentRequest:
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if v is not None}
    return parse(RecentRequest, data)


def parse_related(data: Any) -> RelatedRequest:
    return parse(RelatedRequest, data)


@dataclass(frozen=True)
class Declared:
    """An argument declared by a script or an agent rather than by a pydantic model: a Lua tool's
    parameter (``kind`` is its JSON type) or an agent's argument (``kind`` None: a string)."""

    name: str
    required: bool = False
    default: Any = None
    enum: Sequence[Any] | None = None
    kind: str | None = None


Coerce = Callable[[Declared, Any], Any]
"""Checks one present value against its declaration (``BadRequest`` naming it) and returns it normalised."""


def check_declared(owner: str, noun: str, arguments: Any, declared: Sequence[Declared], *,
                   coerce: Coerce | None = None, blank_is_missing: bool = False) -> dict[str, Any]:
    """Validate ``arguments`` against declarations: an object, no unknown names, required ones present,
    defaults filled, enums respected. ``owner`` names who declared them (``tool 'x'``), ``noun`` what
    they are called (``parameter``, ``argument``); every ``BadRequest`` names both."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise BadRequest(f"{owner}: arguments must be an object")
    check_text(dict(arguments), f"{owner}: the arguments")
    known = {d.name for d in declared}
    unknown = sorted(set(arguments) - known)
    if unknown:
        expected = ", ".join(sorted(known)) or f"no {noun}s"
        raise BadRequest(f"{owner}: unknown {noun} '{unknown[0]}' (expected: {expected})")
    out: dict[str, Any] = {}
    for d in declared:
        value = arguments.get(d.name)
        if value is None or (blank_is_missing and value == ""):
            if d.default is not None:
                out[d.name] = copy.deepcopy(d.default)
            elif d.required:
                raise BadRequest(f"{owner}: missing required {noun} '{d.name}'" + (f" ({d.kind})" if d.kind else ""))
            continue
        if coerce is not None:
            value = coerce(d, value)
        if d.enum is not None and value not in d.enum and str(value) not in d.enum:
            shown = ", ".join(json.dumps(v) if d.kind else str(v) for v in d.enum)
            raise BadRequest(f"{owner}: {noun} '{d.name}' must be one of {shown} (got {json.dumps(value)})")
        out[d.name] = value
    return out


MAX_JSON_DEPTH = jsonlimits.MAX_DEPTH
"""How deeply JSON that a client sends may nest (arrays and objects); no argument needs more."""


def decode_json(raw: bytes | str, what: str = "the request body") -> Any:
    """Untrusted JSON text -> a value, or a ``BadRequest`` naming ``what``: strict UTF-8, no ``NaN`` or
    ``Infinity`` (not JSON), no nesting past ``MAX_JSON_DEPTH`` and no lone surrogate escapes
    (``"\\ud800"`` is valid JSON but not text: nothing downstream could encode it)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        value = jsonlimits.loads(text.removeprefix("\ufeff"), max_depth=MAX_JSON_DEPTH, parse_constant=_not_json)
    except (jsonlimits.TooDeep, RecursionError):
        raise BadRequest(f"{what}: nested more than {MAX_JSON_DEPTH} levels deep") from None
    except (UnicodeDecodeError, ValueError):
        raise BadRequest(f"{what}: not valid JSON (UTF-8, no NaN or Infinity)") from None
    check_text(value, what)
    return value


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def check_text(value: Any, what: str) -> None:
    """``BadRequest`` unless ``value`` nests at most ``MAX_JSON_DEPTH`` levels and every string in it
    (keys too) is text: a lone surrogate (from a JSON escape, or a command line's undecodable byte)
    cannot be encoded, so nothing downstream (SQLite, Tantivy, Lua, the response) could take it."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            _check_text(item, what)
        elif isinstance(item, (list, dict)):
            if depth >= MAX_JSON_DEPTH:
                raise BadRequest(f"{what}: nested more than {MAX_JSON_DEPTH} levels deep")
            if isinstance(item, dict):
                for key in item:
                    _check_text(key, what)
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)


def _check_text(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(f"{what}: a string holds a lone UTF-16 surrogate (such as the escape \\ud800), "
                         "which is not text") from None
