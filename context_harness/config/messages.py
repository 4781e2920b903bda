"""A validation error of the config, or of a table validated like it (the ``[agents]`` section, a
registry's manifest), in words: each problem names its key path and what was expected, and an
unknown key the closest valid key of its table when one is close (``difflib``, the ratio at least
0.6): ``connectors.filesystem.notes.writeable: unknown key; did you mean writable?``.

The valid keys are read from the model validated, walked along the error's key path: a field's
type, a ``dict`` of tables (``[connectors.filesystem.NAME]``), the tables a model keeps as typed
extras (``[registries.NAME]``, ``[agents.NAME]``). Where the walk cannot tell (a free table, a
union of tables) no key is guessed.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

REFERENCE = "the config reference: `ctx help config`"
SHOWN = 5  # problems named in one message; the rest are counted
CLOSE = 0.6  # difflib's ratio a guess needs ("writeable" -> "writable" is 0.94, "zebra" -> anything < 0.5)


def describe_validation_error(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """``exc`` in words; ``model``: the model validated, whose keys an unknown key is compared with."""
    parts = []
    for err in exc.errors()[:SHOWN]:
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        kind = err["type"]
        if kind == "extra_forbidden":
            guess = closest_key(model, err["loc"]) if model is not None else None
            parts.append(f"{key}: unknown key; did you mean {guess}? ({REFERENCE})" if guess
                         else f"{key}: unknown key (check the spelling; {REFERENCE})")
        elif kind == "missing":
            parts.append(f"{key}: required key is missing")
        else:
            got = err.get("input")
            shown = f" (got {got!r})" if isinstance(got, (str, int, float, bool)) else ""
            parts.append(f"{key}: {err['msg'].removeprefix('Value error, ')}{shown}")
    more = len(exc.errors()) - SHOWN
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)


def closest_key(model: type[BaseModel], loc: tuple[int | str, ...]) -> str | None:
    """The valid key of the table at ``loc[:-1]`` closest to the unknown key ``loc[-1]``, if any is close."""
    if not loc:
        return None
    found = difflib.get_close_matches(str(loc[-1]), keys_at(model, loc[:-1]), n=1, cutoff=CLOSE)
    return found[0] if found else None


def keys_at(model: type[BaseModel], path: tuple[int | str, ...]) -> list[str]:
    """The keys the table at ``path`` (from ``model``'s top) may hold; [] when the walk cannot tell."""
    current: Any = model
    for part in path:
        current = _step(current, part)
        if current is None:
            return []
    table = _model_of(current)
    if table is None:
        return []
    return [field.alias or name for name, field in table.model_fields.items() if not field.exclude]


def _step(annotation: Any, part: int | str) -> Any:
    """The type of ``part`` inside a value of type ``annotation`` (None: unknown)."""
    table = _model_of(annotation)
    if table is not None:
        for name, field in table.model_fields.items():
            if part in (name, field.alias):
                return field.annotation
        return _typed_extra(table)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        return args[1]
    if origin is list and len(args) == 1 and isinstance(part, int):
        return args[0]
    return None


def _typed_extra(table: type[BaseModel]) -> Any:
    """The type of the tables a model keeps as extras (``__pydantic_extra__: dict[str, X]``), or None."""
    if table.model_config.get("extra") != "allow":
        return None
    try:
        hints = typing.get_type_hints(table)
    except (NameError, TypeError):
        return None
    args = typing.get_args(hints.get("__pydantic_extra__"))
    return args[1] if len(args) == 2 else None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model in ``annotation`` (``X``, ``X | None``, ``Annotated[X, ...]``), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_of(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        found = [m for m in map(_model_of, typing.get_args(annotation)) if m is not None]
        return found[0] if len(found) == 1 else None
    return None
