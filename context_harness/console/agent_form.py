"""The agent builder's form fields -> an ``AgentDraft`` (``agents.editing`` turns it into the file),
and the checks of the new-skill fieldset.

Tools come as ticked boxes (``tool``, one per tool the server offers) plus a text field (``tools``)
for other names, comma-separated (Claude Code's own, in a file Claude Code also reads). Arguments
come as numbered rows, ``arg-N-name``, ``-description``, ``-required``, ``-enum``, ``-default`` and
``-sample`` (the preview's value), in the order of N. ``choices`` reads a saved agent's allowed values
for its "Try it" form (a select where an argument has them)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from starlette.datastructures import FormData

from context_harness.core.face import NEW_SKILL, SKILL_NAME, AgentDraft, ArgumentRow

MAX_ROWS = 100  # argument rows read from one form
_ROW = re.compile(r"^arg-(\d{1,4})-name$")


def draft_from_form(form: FormData) -> AgentDraft:
    def text(key: str) -> str:
        value = form.get(key)
        return value if isinstance(value, str) else ""

    used = list(dict.fromkeys(v for v in form.getlist("use_skill") if isinstance(v, str)))
    enabled = {v for v in form.getlist("enable_skill") if isinstance(v, str)}
    ticked = [v.strip() for v in form.getlist("tool") if isinstance(v, str) and v.strip()]
    typed = text("tools").strip()
    tools = ", ".join([*ticked, typed] if typed else ticked)
    return AgentDraft(
        name=text("name").strip(), description=text("description").strip(),
        system_prompt=text("system_prompt").replace("\r\n", "\n"), tools=tools,
        arguments=argument_rows(form), version=text("version").strip(), used=used,
        disabled=[s for s in used if s not in enabled], new_skill={key: text(key) for key in NEW_SKILL})


def argument_rows(form: FormData) -> list[ArgumentRow]:
    """The numbered rows, in order; a row left blank is dropped."""
    numbers = sorted({int(m[1]) for key in form if (m := _ROW.match(key))})[:MAX_ROWS]
    rows = []
    for n in numbers:
        def field(name: str, n: int = n) -> str:
            value = form.get(f"arg-{n}-{name}")
            return value.strip() if isinstance(value, str) else ""

        row = ArgumentRow(name=field("name"), description=field("description"), required=bool(field("required")),
                          enum=field("enum"), default=field("default"), sample=field("sample"))
        if not row.blank():
            rows.append(row)
    return rows


@dataclass(frozen=True)
class Choice:
    """An argument with a fixed set of values: the values and the default (None: none)."""

    values: list[str]
    default: str | None


def choices(definition: str) -> dict[str, Choice]:
    """The arguments of an ``agent://NAME`` definition (JSON) that have allowed values, by name."""
    try:
        arguments = json.loads(definition).get("arguments") or []
    except (ValueError, AttributeError):
        return {}
    return {a["name"]: Choice([str(v) for v in a["enum"]], None if a.get("default") is None else str(a["default"]))
            for a in arguments if isinstance(a, dict) and isinstance(a.get("name"), str) and a.get("enum")}


def skill_errors(name: str, known: set[str], folder: Path | None) -> str | None:
    if folder is None:
        return "no skill folder is configured: set [agents] skill_paths in the config file"
    if not SKILL_NAME.match(name):
        return "a skill name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
    if name in known:
        return f"a skill named {name!r} exists already: tick it in the list above"
    return None


__all__ = ["MAX_ROWS", "Choice", "argument_rows", "choices", "draft_from_form", "skill_errors"]
