"""The ``[agents]`` config section, validated here (``Config.agents`` arrives as a plain table).

Reserved keys: ``paths``, ``skill_paths``, ``inline``, ``script``, ``page_size``. Every other key is
an inline TOML agent, exactly like ``[agents.inline.NAME]``::

    [agents]
    paths = ["agents", ".claude/agents"]     # Markdown agent folders (default: these two)
    skill_paths = ["skills", "agents/skills"] # skill folders (default: these plus .claude/skills)
    page_size = 20                            # resources/list page size (1-100)

    [agents.code-reviewer]                    # = [agents.inline.code-reviewer]
    description = "..."
    tools = ["search", "get"]
    system_prompt = "..."
    arguments = [{ name = "language", description = "...", required = false, enum = ["python", "go"] }]
    skills = ["review-checklist"]
    disabled_skills = []

    [agents.script.incident-responder]
    path = "agents/incident-responder.lua"
    timeout = 10                              # seconds; other keys reach the script as context.config

Errors are ``ConfigError`` naming the file and the key path (``agents.code-reviewer.tools``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from context_harness.config import AGENT_RESERVED, Config, ScriptConfig, describe_validation_error
from context_harness.errors import ConfigError

RESERVED = AGENT_RESERVED
DEFAULT_AGENT_PATHS = ("agents", ".claude/agents")
DEFAULT_SKILL_PATHS = ("skills", "agents/skills", ".claude/skills")
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ArgumentConfig(_Strict):
    """One argument of a TOML agent (an MCP prompt argument)."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$", description="the argument's name; {{name}} in "
                      "system_prompt is replaced by its value")
    description: str = Field(default="", description="what to pass, shown by prompt pickers")
    required: bool = Field(default=False, description="a call without it is refused")
    enum: list[str] | None = Field(default=None, min_length=1, description="the values it takes (offered as "
                                   "completions)")
    default: str | None = Field(default=None, description="the value when none is given")


class InlineAgentConfig(_Strict):
    """A TOML agent: ``[agents.NAME]`` or ``[agents.inline.NAME]``."""

    description: str = Field(default="", description="what the agent does, shown in prompt pickers and agent_list")
    tools: list[str] = Field(default_factory=list, description="the tools the agent may use (its tool scope); a list "
                             "or a comma-separated string")
    system_prompt: str = Field(description="the instructions; {{argument}} is replaced by the argument's value")
    arguments: list[ArgumentConfig] = Field(default_factory=list, description="the agent's arguments (MCP "
                                            "prompt arguments)")
    skills: list[str] = Field(default_factory=list, description="skills the agent uses (appended to its prompt)")
    disabled_skills: list[str] = Field(default_factory=list, description="listed skills switched off")
    model: str | None = Field(default=None, description="the [models.NAME] that `ctx agent run` uses (--model "
                              "overrides)")
    approve: Literal["ask", "writes"] = Field(default="ask", description='`ctx agent run`: "ask" (each write needs '
                                              'a person\'s approval, or --yes) or "writes" (writes need none)')
    max_steps: int | None = Field(default=None, ge=1, le=1000, description="`ctx agent run`: model replies a run "
                                  "may take; unset: the model's max_steps")
    max_seconds: float | None = Field(default=None, gt=0, le=86_400, description="`ctx agent run`: seconds a run "
                                      "may take; unset: the model's max_seconds")

    @field_validator("tools", mode="before")
    @classmethod
    def _comma_string(cls, value: Any) -> Any:
        return split_list(value)


class AgentsSection(BaseModel):
    """``[agents]``: where agent files are found; every key not listed here is a TOML agent ``[agents.NAME]``."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, InlineAgentConfig] = Field(init=False)

    paths: list[Path] | None = Field(default=None, description='folders searched for Markdown agents (relative to '
                                     'the config file); unset: ["agents", ".claude/agents"]')
    skill_paths: list[Path] | None = Field(default=None, description="folders holding skill folders (NAME/SKILL.md); "
                                           'unset: ["skills", "agents/skills", ".claude/skills"]')
    inline: dict[str, InlineAgentConfig] = Field(default_factory=dict, description="TOML agents by name")
    script: dict[str, ScriptConfig] = Field(default_factory=dict, description="Lua agents by name")
    page_size: int = Field(default=DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE, description="resources/list page size "
                           "for agent:// and skill:// resources")
    approve_writes: list[str] = Field(default_factory=list, description="agents defined outside this file (Markdown "
                                      "files, a registry's, the project's .ctx/agents) whose writes `ctx agent run` "
                                      "may make without asking; a file's own approve: writes is honoured only for "
                                      'these (a TOML [agents.NAME] or [agents.script.NAME] says approve = "writes")')


class _Root(BaseModel):
    agents: AgentsSection


class AgentSettings:
    """The validated section with every path made absolute."""

    def __init__(self, section: AgentsSection, base_dir: Path, config_label: str, *, defaults: bool) -> None:
        self.config_label = config_label
        self.page_size = section.page_size
        self.approve_writes = frozenset(section.approve_writes)

        def absolute(p: Path) -> Path:
            p = p.expanduser()
            return p if p.is_absolute() else (base_dir / p).resolve()

        agent_paths = section.paths if section.paths is not None else (
            [Path(p) for p in DEFAULT_AGENT_PATHS] if defaults else [])
        skill_paths = section.skill_paths if section.skill_paths is not None else (
            [Path(p) for p in DEFAULT_SKILL_PATHS] if defaults else [])
        self.agent_paths = [absolute(p) for p in agent_paths]
        self.skill_paths = [absolute(p) for p in skill_paths]
        self.inline: list[tuple[str, str, InlineAgentConfig]] = []  # (name, key path, entry)
        for name, entry in (section.model_extra or {}).items():
            self.inline.append((name, f"agents.{name}", entry))
        for name, entry in section.inline.items():
            self.inline.append((name, f"agents.inline.{name}", entry))
        self.scripts: list[tuple[str, ScriptConfig]] = []
        for name, script in section.script.items():
            script.path = absolute(script.path)
            self.scripts.append((name, script))


def split_list(value: Any) -> Any:
    """``"Read, Grep"`` -> ``["Read", "Grep"]`` (Claude Code's comma-separated form)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def load_settings(config: Config) -> AgentSettings:
    raw: Any = config.agents
    if isinstance(raw, BaseModel):  # tolerate a typed section in Config
        raw = raw.model_dump(exclude_unset=True)
    raw = dict(raw or {})
    label = str(config.source_path) if config.source_path else "<config>"
    for key, value in raw.items():
        if key not in RESERVED and not isinstance(value, dict):
            raise ConfigError(f"{label}: agents.{key}: expected a table [agents.{key}] with description and "
                              f"system_prompt (reserved keys: {', '.join(RESERVED)})")
    try:
        section = _Root.model_validate({"agents": raw}).agents
    except ValidationError as exc:
        raise ConfigError(f"{label}: {describe_validation_error(exc, _Root)}") from None
    # Default folders only when the config lives in a file: a config built in code has no "beside".
    return AgentSettings(section, config.base_dir, label, defaults=config.source_path is not None)


__all__ = ["AgentSettings", "AgentsSection", "ArgumentConfig", "InlineAgentConfig", "load_settings", "split_list",
           "DEFAULT_AGENT_PATHS", "DEFAULT_SKILL_PATHS", "DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE"]
