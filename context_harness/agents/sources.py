"""Agent sources -> ``AgentSpec``: TOML entries, Markdown files, Lua scripts and Python objects.

Markdown agents use the Claude Code subagent format, so files from public subagent collections
load unchanged::

    ---
    name: code-reviewer            # default: the file name without .md
    description: Reviews code ...
    tools: Read, Grep, search      # a list or a comma-separated string
    model: sonnet                  # kept as metadata; a [models.NAME] here is what `ctx agent run` uses
    approve: writes                # optional, for `ctx agent run`: approve, max_steps, max_seconds
    color: blue
    skills: [review-checklist]     # optional: skills, disabled_skills, arguments
    ---
    You are a senior reviewer ...  # the body is the system prompt

Files without front matter (a README) and everything inside skill folders are skipped; a file over
``MAX_FILE_BYTES`` (1 MiB) is unavailable, not read. Front matter
past a bound of the YAML loader (``formats.yamlsafe``: an alias, over 64 KiB, over 64 levels) makes
the file unavailable, naming the bound.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from context_harness.agents.base import (
    AgentSpec,
    check_name,
    guarded,
    parse_arguments,
    run_settings,
    static_resolver,
    string_list,
)
from context_harness.agents.settings import InlineAgentConfig
from context_harness.agents.skills import SKILL_FILE
from context_harness.errors import ConfigError
from context_harness.formats.markdown import read_front_matter

log = logging.getLogger(__name__)

MARKDOWN_KEYS = ("name", "description", "tools", "skills", "disabled_skills", "arguments")
MARKDOWN_SUFFIXES = (".md", ".markdown")
MAX_FILE_BYTES = 1024 * 1024  # an agent or skill file (a system prompt of ~250,000 tokens)


# -- TOML -----------------------------------------------------------------------------------------

def toml_spec(name: str, key_path: str, entry: InlineAgentConfig, config_label: str) -> AgentSpec:
    where = f"[{key_path}] in {config_label}"
    check_name(name, where)
    arguments = parse_arguments([a.model_dump() for a in entry.arguments], where)
    return AgentSpec(
        name=name, description=entry.description.strip(), source="toml", origin=where,
        resolver=static_resolver(entry.system_prompt, entry.tools, arguments),
        tools=list(entry.tools), arguments=arguments, skills=list(entry.skills),
        disabled_skills=list(entry.disabled_skills), system_prompt=entry.system_prompt,
        run=run_settings(entry.model_dump(include={"model", "approve", "max_steps", "max_seconds"}, exclude_none=True),
                         where),
    )


# -- Markdown -------------------------------------------------------------------------------------

def markdown_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """(agent files, folders walked) under ``folder``; hidden folders and skill folders are skipped."""
    files: list[Path] = []
    dirs: list[Path] = []
    if not folder.is_dir():
        return files, dirs
    for root, subdirs, names in os.walk(folder, followlinks=False):
        here = Path(root)
        if SKILL_FILE in names and here != folder:
            subdirs[:] = []
            continue
        dirs.append(here)
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for fname in sorted(names):
            if fname.lower().endswith(MARKDOWN_SUFFIXES) and fname != SKILL_FILE:
                files.append(here / fname)
    return files, dirs


def markdown_spec(path: Path) -> AgentSpec | None:
    """The agent a Markdown file defines, or None when it has no front matter (not an agent file)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConfigError(f"agent file {path}: {size:,} bytes; an agent file may hold at most {MAX_FILE_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"agent file {path}: cannot read ({exc.__class__.__name__})") from None
    return parse_markdown_agent(text, path)


def parse_markdown_agent(text: str, path: Path) -> AgentSpec | None:
    """``markdown_spec`` of ``text`` as if read from ``path`` (the console checks a file before writing it)."""
    meta, body, refused = read_front_matter(text)
    if refused:
        raise ConfigError(f"agent file {path}: its front matter was not read ({refused})")
    if not meta:
        log.debug("skipping %s: no front matter", path)
        return None
    where = f"agent file {path}"
    name = check_name(meta.get("name", path.stem), where)
    description = meta.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{where}: description must be a string")
    tools = string_list(meta.get("tools"), where, "tools")
    arguments = parse_arguments(meta.get("arguments"), where)
    system_prompt = body.strip()
    metadata = {k: v for k, v in meta.items() if k not in MARKDOWN_KEYS}
    return AgentSpec(
        name=name, description=description.strip(), source="markdown", origin=where,
        resolver=static_resolver(system_prompt, tools, arguments), tools=tools, arguments=arguments,
        skills=string_list(meta.get("skills"), where, "skills"),
        disabled_skills=string_list(meta.get("disabled_skills"), where, "disabled_skills"),
        system_prompt=system_prompt, metadata=_jsonable(metadata), files=(path,), run=run_settings(meta, where),
    )


def _jsonable(value: Any) -> Any:
    """YAML dates and other scalars -> JSON-friendly values."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


# -- Python ---------------------------------------------------------------------------------------

def python_spec(agent: Any, origin: str) -> AgentSpec:
    """An ``Agent`` object (see ``agents.base.Agent``) -> ``AgentSpec``."""
    where = f"Python agent from {origin}"
    name = check_name(getattr(agent, "name", None), where)
    where = f"Python agent '{name}' ({origin})"
    description = getattr(agent, "description", "") or ""
    if not isinstance(description, str):
        raise ConfigError(f"{where}: description must be a string")
    tools = string_list(getattr(agent, "tools", None), where, "tools")
    arguments = parse_arguments(getattr(agent, "arguments", None), where)
    system_prompt = getattr(agent, "system_prompt", None)
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise ConfigError(f"{where}: system_prompt must be a string")
    resolve = getattr(agent, "resolve", None)
    if callable(resolve):
        resolver = guarded(resolve, where, tools)
    elif system_prompt is not None:
        resolver = static_resolver(system_prompt, tools, arguments)
    else:
        raise ConfigError(f"{where}: define resolve(arguments, context) or a system_prompt")
    return AgentSpec(
        name=name, description=description.strip(), source="python", origin=origin, resolver=resolver,
        tools=tools, arguments=arguments, skills=string_list(getattr(agent, "skills", None), where, "skills"),
        disabled_skills=string_list(getattr(agent, "disabled_skills", None), where, "disabled_skills"),
        system_prompt=system_prompt,
    )


__all__ = ["markdown_files", "markdown_spec", "parse_markdown_agent", "python_spec", "toml_spec"]
