"""Editing a Markdown agent as form fields (the web console's agent editor), and back to the file.

The file is the Claude Code subagent format (``agents.sources``): front matter ``name``,
``description``, ``tools`` (comma-separated), ``skills``, ``disabled_skills``, ``arguments``, any
other key kept as it was (``model``, ``color`` ...), and the body as the system prompt. Each field is
checked with the loader's own functions, then the whole text is parsed by the loader's parser
(``parse_markdown_agent``) before anything is written. Arguments are edited one per line,
``name: description``, a line ending in `` (required)`` marking a required one; an edited argument
keeps its ``enum`` and ``default``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from context_harness.agents.base import check_name, parse_arguments, string_list
from context_harness.agents.sources import MARKDOWN_KEYS, parse_markdown_agent
from context_harness.errors import ConfigError

REQUIRED = " (required)"
NEW_SKILL = ("new_skill_name", "new_skill_category", "new_skill_description", "new_skill_instructions")


@dataclass
class AgentDraft:
    """The form's values: what the page shows and what a save writes."""

    name: str = ""
    description: str = ""
    system_prompt: str = ""
    tools: str = ""
    arguments: str = ""
    version: str = ""
    used: list[str] = field(default_factory=list)  # skills the agent lists
    disabled: list[str] = field(default_factory=list)  # listed skills switched off
    new_skill: dict[str, str] = field(default_factory=lambda: dict.fromkeys(NEW_SKILL, ""))

    def enabled(self, skill: str) -> bool:
        return skill not in self.disabled


def draft_from_file(meta: dict[str, Any], body: str, default_name: str, version: str) -> AgentDraft:
    """The form for an agent file that loaded (so its front matter is valid)."""
    where = "the agent file"
    return AgentDraft(
        name=str(meta.get("name", default_name)), description=str(meta.get("description", "")).strip(),
        system_prompt=body.strip(), tools=", ".join(string_list(meta.get("tools"), where, "tools")),
        arguments=argument_lines(meta.get("arguments")), version=version,
        used=string_list(meta.get("skills"), where, "skills"),
        disabled=string_list(meta.get("disabled_skills"), where, "disabled_skills"))


def argument_lines(raw: Any) -> str:
    """Argument declarations -> the textarea's lines."""
    lines = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            description = str(item.get("description") or "").strip()
            line = f"{item['name']}: {description}" if description else item["name"]
            lines.append(line + (REQUIRED if item.get("required") else ""))
    return "\n".join(lines)


def parse_argument_lines(text: str, previous: Any) -> list[dict[str, Any]]:
    """The textarea's lines -> argument declarations; a name declared before keeps its enum and default."""
    kept = {item["name"]: item for item in previous if isinstance(item, dict) and "name" in item} \
        if isinstance(previous, list) else {}
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        required = line.endswith(REQUIRED)
        if required:
            line = line[: -len(REQUIRED)].rstrip()
        name, _, description = line.partition(":")
        item: dict[str, Any] = {"name": name.strip(), "description": description.strip(), "required": required}
        for key in ("enum", "default"):
            if key in kept.get(item["name"], {}):
                item[key] = kept[item["name"]][key]
        out.append(item)
    return out


def _message(exc: ConfigError, where: str) -> str:
    return exc.message.removeprefix(f"{where}: ")


def check_draft(draft: AgentDraft, known_skills: set[str], previous: dict[str, Any]) -> dict[str, str]:
    """Per-field errors (``name``, ``system_prompt``, ``tools``, ``arguments``, ``skills``), by the loader's rules."""
    errors: dict[str, str] = {}
    try:
        check_name(draft.name, "name")
    except ConfigError as exc:
        errors["name"] = _message(exc, "name")
    if not draft.system_prompt.strip():
        errors["system_prompt"] = "write the agent's instructions: the system prompt is its whole point"
    try:
        string_list(draft.tools, "tools", "tools")
    except ConfigError as exc:
        errors["tools"] = _message(exc, "tools")
    try:
        parse_arguments(parse_argument_lines(draft.arguments, previous.get("arguments")), "arguments")
    except ConfigError as exc:
        errors["arguments"] = _message(exc, "arguments") + " (one argument per line: name: description)"
    unknown = [s for s in draft.used if s not in known_skills]
    if unknown:
        errors["skills"] = f"no such skill: {', '.join(unknown)} (add it below first)"
    return errors


def agent_text(draft: AgentDraft, previous: dict[str, Any]) -> str:
    """The Markdown agent file for ``draft``; ``previous``'s other front-matter keys are kept."""
    front: dict[str, Any] = {"name": draft.name, "description": draft.description}
    tools = string_list(draft.tools, "tools", "tools")
    if tools:
        front["tools"] = ", ".join(tools)
    front.update({k: v for k, v in previous.items() if k not in MARKDOWN_KEYS})
    if draft.used:
        front["skills"] = list(draft.used)
    if draft.disabled:
        front["disabled_skills"] = list(draft.disabled)
    arguments = parse_argument_lines(draft.arguments, previous.get("arguments"))
    if arguments:
        front["arguments"] = arguments
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1_000_000)
    return f"---\n{head}---\n\n{draft.system_prompt.strip()}\n"


def checked_text(draft: AgentDraft, path: Path, previous: dict[str, Any]) -> tuple[str, str | None]:
    """``(file text, None)``, or ``(text, why not)`` when the loader's parser refuses the text or reads
    it back as something else than the form says."""
    text = agent_text(draft, previous)
    try:
        spec = parse_markdown_agent(text, path)
    except ConfigError as exc:
        return text, exc.message.replace(f"agent file {path}: ", "")
    if spec is None or spec.name != draft.name or spec.system_prompt != draft.system_prompt.strip():
        return text, "the file would not read back as this agent; check the fields"
    return text, None


__all__ = ["NEW_SKILL", "AgentDraft", "agent_text", "argument_lines", "check_draft", "checked_text",
           "draft_from_file", "parse_argument_lines"]
