"""How a resolved agent is written out: the system prompt with its active skills, the one-string
``compiled`` form and the ``structured`` form of ``agent_inject``.

``compiled`` (exact layout; sections separated by one blank line)::

    You are now acting as the agent "NAME". Follow these instructions for the rest of this conversation.

    <system prompt>

    ## Active Skills            (omitted when no skill is enabled)

    ### <skill name>

    <skill instructions>

    ## Context                  (omitted when the agent returned no messages)

    <message content>           (one block per message, in order)
"""

from __future__ import annotations

from collections.abc import Sequence

from context_harness.agents.models import AgentMessage, SkillOut

HEADER = 'You are now acting as the agent "{name}". Follow these instructions for the rest of this conversation.'


def skills_section(skills: Sequence[SkillOut]) -> str:
    if not skills:
        return ""
    parts = ["## Active Skills"]
    for skill in skills:
        parts.append(f"### {skill.name}")
        if skill.instructions:
            parts.append(skill.instructions)
    return "\n\n".join(parts)


def with_skills(system: str, skills: Sequence[SkillOut]) -> str:
    """The system prompt followed by the ``## Active Skills`` section (if any skill is enabled)."""
    section = skills_section(skills)
    if not section:
        return system
    return f"{system.rstrip()}\n\n{section}" if system.strip() else section


def fold_system(system: str, messages: Sequence[AgentMessage]) -> tuple[str, list[AgentMessage]]:
    """``(system prompt + the system-role messages' contents, the other messages)``: for MCP prompts
    and compiled text, which have no system role. Blocks are separated by one blank line."""
    extra = [m.content.strip() for m in messages if m.role == "system" and m.content.strip()]
    others = [m for m in messages if m.role != "system"]
    if not extra:
        return system, others
    return "\n\n".join([system.rstrip(), *extra] if system.strip() else extra), others


FOLLOW = "Follow these instructions for the rest of this conversation."


def instructions_message(name: str, system: str) -> str:
    """The first user message of ``prompts/get``: the system prompt wrapped as instructions."""
    return f'<instructions agent="{name}">\n{system.strip()}\n</instructions>\n\n{FOLLOW}'


def prompt_get_messages(name: str, system: str, messages: Sequence[AgentMessage]) -> list[tuple[str, str]]:
    """An agent's ``prompts/get`` messages as ``(role, text)``: instructions first (the system prompt,
    then the contents of any ``system`` messages: MCP prompts have no system role), then the others.
    The MCP adapter sends them; the console shows them."""
    system, others = fold_system(system, messages)
    return [("user", instructions_message(name, system)), *((m.role, m.content) for m in others)]


def compiled_text(name: str, system: str, skills: Sequence[SkillOut], messages: Sequence[AgentMessage]) -> str:
    """The ``compiled`` layout above; system-role messages join the system prompt (``fold_system``)."""
    system, messages = fold_system(system, messages)
    parts = [HEADER.format(name=name)]
    if system.strip():
        parts.append(system.strip())
    section = skills_section(skills)
    if section:
        parts.append(section)
    if messages:
        parts.append("## Context")
        parts.extend(m.content.strip() for m in messages if m.content.strip())
    return "\n\n".join(parts) + "\n"


__all__ = ["FOLLOW", "HEADER", "compiled_text", "fold_system", "instructions_message", "prompt_get_messages",
           "skills_section", "with_skills"]
