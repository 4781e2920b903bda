"""The agent editor's form fields -> an ``AgentDraft`` (``agents.editing`` turns it into the file),
and the checks of the new-skill fieldset."""

from __future__ import annotations

from pathlib import Path

from starlette.datastructures import FormData

from context_harness.core.face import NEW_SKILL, SKILL_NAME, AgentDraft


def draft_from_form(form: FormData) -> AgentDraft:
    def text(key: str) -> str:
        value = form.get(key)
        return value if isinstance(value, str) else ""

    used = list(dict.fromkeys(v for v in form.getlist("use_skill") if isinstance(v, str)))
    enabled = {v for v in form.getlist("enable_skill") if isinstance(v, str)}
    return AgentDraft(
        name=text("name").strip(), description=text("description").strip(),
        system_prompt=text("system_prompt").replace("\r\n", "\n"), tools=text("tools").strip(),
        arguments=text("arguments").replace("\r\n", "\n"), version=text("version").strip(), used=used,
        disabled=[s for s in used if s not in enabled], new_skill={key: text(key) for key in NEW_SKILL})


def skill_errors(name: str, known: set[str], folder: Path | None) -> str | None:
    if folder is None:
        return "no skill folder is configured: set [agents] skill_paths in the config file"
    if not SKILL_NAME.match(name):
        return "a skill name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
    if name in known:
        return f"a skill named {name!r} exists already: tick it in the list above"
    return None


__all__ = ["draft_from_form", "skill_errors"]
