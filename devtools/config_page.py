"""``reference/config.md``: every key of ``ctx.toml``, from the pydantic models that validate it.

The sections are walked from ``Config``: a field holding a model is a section, a ``dict[str, Model]``
is a section of named tables (``[connectors.git.NAME]``), a ``list[Model]`` an array of tables. The
``[agents]`` table arrives in ``Config`` as a plain table and is validated by ``AgentsSection``,
so it is walked from there.
"""

from __future__ import annotations

import json
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from devtools.markdown import GENERATED_NOTE, Undocumented, code, first_paragraph, own_doc, table

NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path", Any: "any"}
BOUNDS = ((annotated_types.Ge, "≥"), (annotated_types.Gt, ">"), (annotated_types.Le, "≤"), (annotated_types.Lt, "<"))


@dataclass
class Section:
    """One table of the page: ``[heading]`` with its keys."""

    heading: str
    text: str
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)


def model_of(annotation: Any) -> tuple[str, type[BaseModel]] | None:
    """``("", M)`` for a model, ``(".NAME", M)`` for ``dict[str, M]``, ``("[]", M)`` for ``list[M]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "", annotation
    args = get_args(annotation)
    if get_origin(annotation) is dict and len(args) == 2 and model_of(args[1]) == ("", args[1]):
        return ".NAME", args[1]
    if get_origin(annotation) is list and args and model_of(args[0]) == ("", args[0]):
        return "[]", args[0]
    return None


def type_text(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return " or ".join(type_text(a) for a in args if a is not type(None))
    if origin is Literal:
        return " or ".join(json.dumps(a) for a in args)
    if origin is list:
        return f"array of {type_text(args[0])}" if args else "array"
    if origin is dict:
        return "table"
    return NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)))


def bounds(info: FieldInfo) -> str:
    found = [f"{sign} {getattr(m, next(iter(m.__dataclass_fields__)))}" for m in info.metadata
             for kind, sign in BOUNDS if isinstance(m, kind)]
    return ", ".join(found)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, Path)):
        return json.dumps(str(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{}" if not value else json.dumps(value)
    return repr(value)


def default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    factory = info.default_factory
    if factory is not None:
        if factory in (list, dict):
            return code(toml_value(factory()))
        return first_paragraph(own_doc(factory)) or code(toml_value(factory()))  # type: ignore[call-arg]
    return "unset" if info.default is None else code(toml_value(info.default))


class Walk:
    """Collects the sections of one model tree; a model met again is referred to, not repeated."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.home: dict[type[BaseModel], str] = {}  # the heading each model is documented under
        self.missing: list[str] = []

    def claim(self, model: type[BaseModel], heading: str) -> bool:
        """True if ``model`` is documented under ``heading``; False if it already has a home."""
        if model in self.home:
            return False
        self.home[model] = heading
        return True

    def model(self, model: type[BaseModel], prefix: str, heading: str) -> None:
        text = own_doc(model).removeprefix(f"`{heading}`: ")
        if not text:
            self.missing.append(f"{heading} (the docstring of {model.__module__}.{model.__qualname__})")
        section = Section(heading, text[:1].upper() + text[1:])
        self.sections.append(section)
        nested: list[tuple[type[BaseModel], str, str]] = []
        extra = self._typed_extra(model)
        if extra is not None and self.claim(extra, f"[{prefix}.NAME]"):
            nested.append((extra, f"{prefix}.NAME", f"[{prefix}.NAME]"))
        for name, info in model.model_fields.items():
            if info.exclude:
                continue
            key = f"{prefix}.{name}"
            found = model_of(info.annotation)
            if found is not None:
                sub_prefix = key + (".NAME" if found[0] == ".NAME" else "[]" if found[0] else "")
                sub_heading = f"[[{key}]]" if found[0] == "[]" else f"[{sub_prefix}]"
                if self.claim(found[1], sub_heading):
                    nested.append((found[1], sub_prefix, sub_heading))
                    if found[0]:  # a table of named tables, or an array of tables: a row points at it
                        if not info.description:
                            self.missing.append(f"{key} ({model.__module__}.{model.__qualname__}.{name})")
                        kind = "array of tables" if found[0] == "[]" else "table"
                        section.rows.append((code(key), kind, default_text(info),
                                             f"{info.description or ''}: see {code(sub_heading)}"))
                    continue
            if not info.description:
                self.missing.append(f"{key} ({model.__module__}.{model.__qualname__}.{name})")
            if found is not None:
                section.rows.append((code(key), "table", default_text(info), f"{info.description or ''}: the keys of "
                                     f"{code(self.home[found[1]])}"))
                continue
            kind, limit = type_text(info.annotation), bounds(info)
            section.rows.append((code(key), f"{kind} ({limit})" if limit else kind, default_text(info),
                                 info.description or ""))
        if extra is None and model.model_config.get("extra") == "allow":
            section.rows.append((code(f"{prefix}.<other key>"), "any", "", "not validated here: passed on as given "
                                 "(see the text above)"))
        for sub, sub_prefix, sub_heading in nested:
            self.model(sub, sub_prefix, sub_heading)

    @staticmethod
    def _typed_extra(model: type[BaseModel]) -> type[BaseModel] | None:
        """The model of every undeclared key (``[agents.NAME]``), if the extra keys are typed."""
        if model.model_config.get("extra") != "allow":
            return None
        try:
            typed = get_type_hints(model).get("__pydantic_extra__")
        except (NameError, TypeError):
            return None
        found = model_of(get_args(typed)[1]) if typed is not None and len(get_args(typed)) == 2 else None
        return found[1] if found is not None else None


def sections() -> tuple[list[Section], list[str]]:
    from context_harness.agents.settings import AgentsSection
    from context_harness.config import Config

    walk = Walk()
    for name, info in Config.model_fields.items():
        if info.exclude:
            continue
        found = ("", AgentsSection) if name == "agents" else model_of(info.annotation)
        if found is None:
            raise Undocumented("reference/config.md", [f"{name}: not a section model"], "devtools/config_page.py")
        if walk.claim(found[1], f"[{name}]"):
            walk.model(found[1], name, f"[{name}]")
    return walk.sections, walk.missing


def keys() -> list[str]:
    """Every key path the page documents (``server.bind``, ``connectors.git.NAME.url`` ...)."""
    return [row[0].strip("`") for section in sections()[0] for row in section.rows]


def page() -> str:
    from context_harness import config as config_module

    found, missing = sections()
    if missing:
        raise Undocumented("reference/config.md", missing, "context_harness/config/__init__.py or agents/settings.py "
                           "(Field(description=...), class docstrings)")
    out = ["# Configuration reference", "", GENERATED_NOTE.format(source="the pydantic models in "
           "`context_harness/config/__init__.py` and `context_harness/agents/settings.py`"), "",
           own_doc(config_module).split("\n\n", 1)[-1], "",
           "A key written `NAME` is yours to choose: `[connectors.filesystem.notes]` is a filesystem connector "
           "named `notes`. A key marked *required* has no default. Unknown keys are errors, except where a table "
           "says its other keys are passed on.", ""]
    for section in found:
        out += [f"## `{section.heading}`", "", section.text, ""]
        if section.rows:
            out += [table(["key", "type", "default", "description"], section.rows), ""]
    return "\n".join(out).rstrip() + "\n"
