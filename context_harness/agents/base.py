"""What an agent is, inside: one ``AgentSpec`` per agent whatever its source, and the ``Agent``
protocol Python extensions implement.

Every source (TOML, Markdown, Lua, Python) is turned into an ``AgentSpec``: its public description
(name, description, tools, arguments, skills), where it was defined (``origin``, for error messages),
the files it was read from (for cache invalidation) and a blocking ``resolver``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

from context_harness.agents.models import AgentArgument, AgentInfo, AgentPrompt
from context_harness.common.validation import Declared, check_declared, describe
from context_harness.errors import AgentError, ConfigError, HarnessError
from context_harness.lua.bridge import ScriptContext

log = logging.getLogger(__name__)

AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")

AgentContext = ScriptContext
"""What ``resolve`` receives as ``context``: blocking ``search(request: dict) -> list[dict]``,
``get(id) -> dict`` and ``sources() -> list[dict]`` (see ``context_harness.core.context.HarnessContext``)."""


@runtime_checkable
class Agent(Protocol):
    """A Python agent (entry-point group ``context_harness.agents``, or registered in code).

    Required: ``name``, ``description`` and ``resolve``. Optional attributes, read when present:
    ``tools: list[str]``, ``arguments: list[AgentArgument | dict]`` (dicts may add ``enum`` and
    ``default``), ``skills: list[str]``, ``disabled_skills: list[str]`` and ``system_prompt: str``
    (a static prompt shown in the agent's definition).

    ``resolve`` is blocking and runs in a worker thread. ``arguments`` holds the validated
    arguments (required ones present, defaults filled). Return an ``AgentPrompt``, a mapping
    ``{system, tools?, messages?}`` or just the system prompt string. Raise a ``HarnessError``
    (e.g. ``BadRequest``) to report a problem; any other exception becomes ``agent_error``.
    """

    name: str
    description: str

    def resolve(self, arguments: dict[str, Any], context: AgentContext | None) -> AgentPrompt | Mapping[str, Any] | str:
        ...


@dataclass(frozen=True)
class Argument:
    name: str
    description: str = ""
    required: bool = False
    enum: tuple[str, ...] | None = None
    default: str | None = None

    def public(self) -> AgentArgument:
        return AgentArgument(name=self.name, description=self.description, required=self.required)

    def definition(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description, "required": self.required}
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.default is not None:
            out["default"] = self.default
        return out


Resolver = Callable[[dict[str, Any], "AgentContext | None"], AgentPrompt]


APPROVE_CHOICES = ("ask", "writes")
CLAUDE_CODE_MODELS = frozenset({"sonnet", "opus", "haiku", "inherit"})
"""What ``model:`` says in a Claude Code subagent file: Claude Code's own choices, not a ``[models.NAME]``
(``ctx agent run`` then uses the default model, and says so in the run's record)."""


@dataclass(frozen=True)
class RunSettings:
    """How ``ctx agent run`` drives an agent: ``model`` (a ``[models.NAME]``), ``approve`` ("ask": a
    person approves each write; "writes": writes need no approval) and its budget (unset: the model's)."""

    model: str | None = None
    approve: str = "ask"
    max_steps: int | None = None
    max_seconds: float | None = None


CONFIG_SOURCES = ("toml", "lua")  # agents whose run settings are tables of the user's own config file


def standing_grant(spec: AgentSpec, approve_writes: frozenset[str], config_label: str) -> str | None:
    """Who let agent ``spec`` write without asking, or None. Pre-approval is a power of the user's own
    config: ``approve = "writes"`` in a config table (a TOML or Lua agent), or the agent named in
    ``[agents] approve_writes``; never a file that arrived with a registry or a cloned project, which
    may say ``approve: writes`` only to ask for it."""
    if spec.name in approve_writes:
        return f"your config ([agents] approve_writes in {config_label})"
    if spec.run.approve == "writes" and spec.source in CONFIG_SOURCES:
        return f"your config (approve = \"writes\" in {spec.origin})"
    return None


def asks_to_write_unasked(path: Path) -> str | None:
    """The name of the Markdown agent in ``path`` when its front matter says ``approve: writes`` (which
    only the user's config can grant, ``standing_grant``); None otherwise or when it cannot be read."""
    from context_harness.formats.markdown import split_front_matter

    try:
        meta, _ = split_front_matter(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return str(meta.get("name") or path.stem) if meta.get("approve") == "writes" else None


def run_settings(raw: Mapping[str, Any], where: str) -> RunSettings:
    """``RunSettings`` from an agent's keys (``model``, ``approve``, ``max_steps``, ``max_seconds``);
    ``ConfigError`` names the key that is wrong."""
    model, approve = raw.get("model"), raw.get("approve", "ask")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ConfigError(f"{where}: model must be the name of a [models.NAME] table")
    if approve not in APPROVE_CHOICES:
        raise ConfigError(f"{where}: approve must be \"ask\" (a person approves each write) or \"writes\" "
                          f"(writes need no approval), not {approve!r}")
    return RunSettings(model=model.strip() if model else None, approve=approve,
                       max_steps=_positive(raw.get("max_steps"), where, "max_steps", int),
                       max_seconds=_positive(raw.get("max_seconds"), where, "max_seconds", float))


def _positive(value: Any, where: str, key: str, kind: type) -> Any:
    if value is None:
        return None
    whole = kind is not int or (isinstance(value, (int, float)) and value == int(value))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or not whole:
        raise ConfigError(f"{where}: {key} must be a positive {'whole number' if kind is int else 'number'}")
    return kind(value)


@dataclass
class AgentSpec:
    name: str
    description: str
    source: str  # toml | lua | markdown | python
    origin: str  # where it is defined, for messages: "[agents.x] in ctx.toml", a file path ...
    resolver: Resolver
    tools: list[str] = field(default_factory=list)
    arguments: list[Argument] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    disabled_skills: list[str] = field(default_factory=list)
    system_prompt: str | None = None  # static agents only
    metadata: dict[str, Any] = field(default_factory=dict)
    files: tuple[Path, ...] = ()
    run: RunSettings = field(default_factory=RunSettings)

    def info(self) -> AgentInfo:
        return AgentInfo(name=self.name, description=self.description, tools=list(self.tools),
                         source=self.source, arguments=[a.public() for a in self.arguments])  # type: ignore[arg-type]

    def enabled_skills(self) -> list[str]:
        off = set(self.disabled_skills)
        return [s for s in self.skills if s not in off]

    def check_arguments(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validated arguments: unknown names, missing required values and enum misses are ``BadRequest``."""
        declared = [Declared(a.name, a.required, a.default, a.enum) for a in self.arguments]
        return check_declared(f"agent '{self.name}'", "argument", arguments, declared, blank_is_missing=True)


def check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not AGENT_NAME.match(name):
        raise ConfigError(f"{where}: agent names must match ^[A-Za-z0-9][A-Za-z0-9_.-]{{0,63}}$ (got {name!r})")
    return name


def parse_arguments(raw: Any, where: str) -> list[Argument]:
    """Argument declarations (dicts, ``AgentArgument`` models or ``Argument``s) -> ``Argument``s."""
    from context_harness.agents.settings import ArgumentConfig

    if raw is None or raw == {}:
        return []
    if not isinstance(raw, (list, tuple)):
        raise ConfigError(f"{where}: arguments must be a list of {{name, description, required}} tables")
    out: list[Argument] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        if isinstance(item, Argument):
            arg = item
        else:
            if isinstance(item, BaseModel):
                item = item.model_dump(exclude_none=True)
            try:
                parsed = ArgumentConfig.model_validate(item)
            except ValidationError as exc:
                raise ConfigError(f"{where}: arguments[{i}]: {describe(exc)}") from None
            arg = Argument(parsed.name, parsed.description, parsed.required,
                           tuple(parsed.enum) if parsed.enum is not None else None, parsed.default)
        if arg.name in seen:
            raise ConfigError(f"{where}: argument '{arg.name}' is declared twice")
        if arg.enum is not None and arg.default is not None and arg.default not in arg.enum:
            raise ConfigError(f"{where}: argument '{arg.name}': default must be one of its enum values")
        seen.add(arg.name)
        out.append(arg)
    return out


def string_list(raw: Any, where: str, key: str) -> list[str]:
    from context_harness.agents.settings import split_list

    raw = split_list(raw)
    if raw is None or raw == {}:
        return []
    if not isinstance(raw, (list, tuple)) or not all(isinstance(x, str) for x in raw):
        raise ConfigError(f"{where}: {key} must be a list of strings (or a comma-separated string)")
    return [x.strip() for x in raw if x.strip()]


def fill_placeholders(text: str, arguments: Mapping[str, Any], declared: Sequence[Argument]) -> str:
    """``{{name}}`` -> the argument's value, for declared arguments only (absent optional -> "")."""
    names = {a.name for a in declared}
    if not names:
        return text

    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in names:
            return match.group(0)
        value = arguments.get(key)
        return "" if value is None else str(value)

    return _PLACEHOLDER.sub(substitute, text)


def static_resolver(system_prompt: str, tools: list[str], arguments: list[Argument]) -> Resolver:
    def resolve(args: dict[str, Any], context: AgentContext | None) -> AgentPrompt:
        return AgentPrompt(system=fill_placeholders(system_prompt, args, arguments), tools=list(tools))

    return resolve


def coerce_prompt(value: Any, what: str, default_tools: list[str]) -> AgentPrompt:
    """What a Lua or Python agent returned -> ``AgentPrompt`` (``AgentError`` when it is not one)."""
    if isinstance(value, AgentPrompt):
        return value
    if isinstance(value, str):
        return AgentPrompt(system=value, tools=list(default_tools))
    if not isinstance(value, Mapping):
        raise AgentError(f"{what} must return a table/object {{system, tools?, messages?}}")
    data = dict(value)
    if data.get("tools") in (None, {}):
        data["tools"] = list(default_tools)
    if data.get("messages") in (None, {}):
        data["messages"] = []
    try:
        return AgentPrompt.model_validate(data)
    except ValidationError as exc:
        raise AgentError(f"{what} returned an invalid prompt: {describe(exc)}") from None


def guarded(resolver: Callable[[dict[str, Any], Any], Any], what: str, default_tools: list[str]) -> Resolver:
    """Wrap third-party code: ``HarnessError`` passes through, anything else is logged and becomes
    a generic ``AgentError`` (a client never sees a raw exception string)."""

    def resolve(args: dict[str, Any], context: AgentContext | None) -> AgentPrompt:
        try:
            value = resolver(args, context)
        except HarnessError:
            raise
        except Exception:
            log.exception("%s failed", what)
            raise AgentError(f"{what} failed; see the server log for details") from None
        return coerce_prompt(value, what, default_tools)

    return resolve


__all__ = ["AGENT_NAME", "Agent", "AgentContext", "AgentSpec", "Argument", "Resolver", "asks_to_write_unasked",
           "check_name", "coerce_prompt", "fill_placeholders", "guarded", "parse_arguments", "standing_grant",
           "static_resolver", "string_list"]
