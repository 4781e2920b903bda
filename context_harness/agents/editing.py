"""Editing a Markdown agent as form fields (the web console's agent builder), and back to the file.

The file is the Claude Code subagent format (``agents.sources``): front matter ``name``,
``description``, ``tools`` (comma-separated), ``skills``, ``disabled_skills``, ``arguments``, any
other key kept as it was (``model``, ``color`` ...), and the body as the system prompt. Each field is
checked here, in words (a name's rules, never a regular expression), then the whole text is parsed
by the loader's parser (``parse_markdown_agent``) before anything is written. Arguments are rows
(name, description, required, allowed values, default) plus a sample value for the preview, which
is never saved.

Tools: a name this server does not offer is refused (``unknown_tools``), except Claude Code's own
tools (``Read``, ``Grep`` ...) and ``mcp__SERVER__TOOL`` names, which a Claude Code subagent file
names on purpose, and any name in a file under a ``.claude`` folder (Claude Code's own agents).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_harness.agents.base import AGENT_NAME, string_list
from context_harness.agents.sources import MARKDOWN_KEYS, parse_markdown_agent
from context_harness.errors import ConfigError
from context_harness.formats import yamlsafe

NEW_SKILL = ("new_skill_name", "new_skill_category", "new_skill_description", "new_skill_instructions")
ARGUMENT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")  # as ``settings.ArgumentConfig`` checks it
AGENT_NAME_RULE = "an agent name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
ARGUMENT_NAME_RULE = ("an argument name starts with a letter or _ and holds up to 64 letters, digits, "
                      "_ . or -")
CLAUDE_CODE_TOOLS = frozenset({
    "Agent", "Bash", "BashOutput", "Edit", "ExitPlanMode", "Glob", "Grep", "KillShell", "LS", "MultiEdit",
    "NotebookEdit", "NotebookRead", "Read", "SlashCommand", "Task", "TodoWrite", "WebFetch", "WebSearch", "Write",
})
"""Claude Code's own tools, which a subagent file names in ``tools:`` (this server offers none of them)."""


@dataclass
class ArgumentRow:
    """One argument as the builder shows it; ``enum`` is comma-separated and ``sample`` the preview's value."""

    name: str = ""
    description: str = ""
    required: bool = False
    enum: str = ""
    default: str = ""
    sample: str = ""

    def blank(self) -> bool:
        return not (self.name or self.description or self.enum or self.default or self.sample)

    def values(self) -> list[str]:
        return [v.strip() for v in self.enum.split(",") if v.strip()]

    def declaration(self) -> dict[str, Any]:
        item: dict[str, Any] = {"name": self.name, "description": self.description, "required": self.required}
        if self.values():
            item["enum"] = self.values()
        if self.default:
            item["default"] = self.default
        return item


@dataclass
class AgentDraft:
    """The form's values: what the page shows and what a save writes."""

    name: str = ""
    description: str = ""
    system_prompt: str = ""
    tools: str = ""
    arguments: list[ArgumentRow] = field(default_factory=list)
    version: str = ""
    used: list[str] = field(default_factory=list)  # skills the agent lists
    disabled: list[str] = field(default_factory=list)  # listed skills switched off
    new_skill: dict[str, str] = field(default_factory=lambda: dict.fromkeys(NEW_SKILL, ""))

    def enabled(self, skill: str) -> bool:
        return skill not in self.disabled

    def tool_names(self) -> list[str]:
        """The tools, or [] when the field does not parse (``check_draft`` says why)."""
        try:
            return list(dict.fromkeys(string_list(self.tools, "tools", "tools")))
        except ConfigError:
            return []

    def declared(self) -> list[ArgumentRow]:
        """The argument rows that are filled in (a blank row is no argument)."""
        return [row for row in self.arguments if not row.blank()]

    def samples(self) -> dict[str, str]:
        """The sample values given, by argument name: what the preview resolves the prompt with."""
        return {row.name: row.sample for row in self.declared() if row.sample != ""}


def draft_from_file(meta: dict[str, Any], body: str, default_name: str, version: str) -> AgentDraft:
    """The form for an agent file that loaded (so its front matter is valid)."""
    where = "the agent file"
    return AgentDraft(
        name=str(meta.get("name", default_name)), description=str(meta.get("description", "")).strip(),
        system_prompt=body.strip(), tools=", ".join(string_list(meta.get("tools"), where, "tools")),
        arguments=argument_rows(meta.get("arguments")), version=version,
        used=string_list(meta.get("skills"), where, "skills"),
        disabled=string_list(meta.get("disabled_skills"), where, "disabled_skills"))


def argument_rows(raw: Any) -> list[ArgumentRow]:
    """Argument declarations -> the builder's rows."""
    rows = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            enum, default = item.get("enum"), item.get("default")
            rows.append(ArgumentRow(
                name=item["name"], description=str(item.get("description") or "").strip(),
                required=bool(item.get("required")), default="" if default is None else str(default),
                enum=", ".join(str(v) for v in enum) if isinstance(enum, list) else ""))
    return rows


def unknown_tools(tools: Iterable[str], known: Iterable[str], path: Path | None) -> list[str]:
    """The names in ``tools`` that are not among ``known`` (this server's tools), Claude Code's own
    tools and ``mcp__`` names aside; none for a file under a ``.claude`` folder (Claude Code's agents)."""
    if path is not None and ".claude" in path.parts:
        return []
    offered = set(known)
    return [t for t in tools if t not in offered and t not in CLAUDE_CODE_TOOLS and not t.startswith("mcp__")]


def unknown_tools_message(unknown: list[str], known: Iterable[str]) -> str:
    names = ", ".join(repr(t) for t in unknown)
    return (f"{'unknown tool' if len(unknown) == 1 else 'unknown tools'} {names}: this server's tools are "
            f"{', '.join(sorted(known)) or 'none'} (Claude Code's own tools, such as Read or Grep, and "
            "mcp__SERVER__TOOL names are kept as written)")


def argument_errors(rows: list[ArgumentRow]) -> dict[int, str]:
    """Per-row problems (by the row's position), in words."""
    errors: dict[int, str] = {}
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if row.blank():
            continue
        values = row.values()
        if not row.name:
            errors[index] = "give the argument a name (or clear the row to drop it)"
        elif not ARGUMENT_NAME.match(row.name):
            errors[index] = f"{row.name!r}: {ARGUMENT_NAME_RULE}"
        elif row.name in seen:
            errors[index] = f"{row.name!r} is declared twice: give each argument its own name"
        elif len(values) != len(set(values)):
            errors[index] = "an allowed value is listed twice"
        elif row.default and values and row.default not in values:
            errors[index] = f"the default {row.default!r} is not one of the allowed values ({', '.join(values)})"
        seen.add(row.name)
    return errors


def check_draft(draft: AgentDraft, known_skills: set[str], known_tools: Iterable[str] | None = None,
                path: Path | None = None) -> dict[str, str]:
    """Per-field errors (``name``, ``system_prompt``, ``tools``, ``arguments`` and ``arg-N`` for row N,
    ``skills``), in words; ``known_tools``: this server's tools (None: any name)."""
    errors: dict[str, str] = {}
    if not AGENT_NAME.match(draft.name):
        errors["name"] = AGENT_NAME_RULE
    if not draft.system_prompt.strip():
        errors["system_prompt"] = "write the agent's instructions: the system prompt is its whole point"
    try:
        string_list(draft.tools, "tools", "tools")
    except ConfigError:
        errors["tools"] = "tools are names separated by commas"
    if "tools" not in errors and known_tools is not None:
        known = list(known_tools)
        unknown = unknown_tools(draft.tool_names(), known, path)
        if unknown:
            errors["tools"] = unknown_tools_message(unknown, known)
    rows = argument_errors(draft.arguments)
    for index, problem in rows.items():
        errors[f"arg-{index}"] = problem
    if rows:
        errors["arguments"] = f"{len(rows)} argument{'s' if len(rows) != 1 else ''} to fix: see the marked rows"
    unknown_skills = [s for s in draft.used if s not in known_skills]
    if unknown_skills:
        errors["skills"] = f"no such skill: {', '.join(unknown_skills)} (add it below first)"
    return errors


def agent_text(draft: AgentDraft, previous: dict[str, Any]) -> str:
    """The Markdown agent file for ``draft``; ``previous``'s other front-matter keys are kept."""
    front: dict[str, Any] = {"name": draft.name, "description": draft.description}
    tools = draft.tool_names()
    if tools:
        front["tools"] = ", ".join(tools)
    front.update({k: v for k, v in previous.items() if k not in MARKDOWN_KEYS})
    if draft.used:
        front["skills"] = list(draft.used)
    if draft.disabled:
        front["disabled_skills"] = list(draft.disabled)
    arguments = [row.declaration() for row in draft.declared()]
    if arguments:
        front["arguments"] = arguments
    head = yamlsafe.dump(front)
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


__all__ = ["AGENT_NAME_RULE", "ARGUMENT_NAME_RULE", "CLAUDE_CODE_TOOLS", "NEW_SKILL", "AgentDraft", "ArgumentRow",
           "agent_text", "argument_errors", "argument_rows", "check_draft", "checked_text", "draft_from_file",
           "unknown_tools", "unknown_tools_message"]
