"""``AgentLibrary``: every agent from every source, cached, with resolve/compile/resources.

Built once from the config (``build_agent_library``). Definitions are cached; the server polls
``refresh()`` (or ``changed()`` + ``reload()``) and announces ``prompts/list_changed`` and
``resources/list_changed`` when it returns True. All methods are blocking-safe and cheap except
``resolve``/``compile`` (they run the agent: call them from a worker thread) and ``reload``.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import hashlib
import json
import logging
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from context_harness.agents.base import AgentContext, AgentSpec
from context_harness.agents.lua_agent import lua_spec
from context_harness.agents.models import (
    AgentInfo,
    AgentPrompt,
    ResourceEntry,
    ResourcePage,
    SkillOut,
    StructuredAgent,
    dump,
)
from context_harness.agents.render import compiled_text, with_skills
from context_harness.agents.settings import MAX_PAGE_SIZE, load_settings
from context_harness.agents.skills import Skill, load_skills, skill_files
from context_harness.agents.sources import markdown_files, markdown_spec, python_spec, toml_spec
from context_harness.common.validation import decode_json, plain_int
from context_harness.config import Config, Unavailable
from context_harness.errors import BadRequest, ConfigError, NotConfigured, NotFound

log = logging.getLogger(__name__)

AGENT_SCHEME = "agent://"
SKILL_SCHEME = "skill://"
FORMATS = ("compiled", "structured")
JSON_MIME = "application/json"
MAX_COMPLETIONS = 100
DEFINITION_CACHE = 256  # agent:// and skill:// definitions kept (least recently read dropped first)

Snapshot = dict[str, tuple[int, int] | None]


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _snapshot(paths: Iterable[Path]) -> Snapshot:
    return {str(p): _stat(p) for p in paths}


@dataclass
class _State:
    specs: dict[str, AgentSpec]
    skills: dict[str, Skill]
    infos: list[AgentInfo]
    index: list[tuple[str, str, str]]  # (name, uri, description), sorted
    snapshot: Snapshot
    page_size: int
    broken: dict[str, Unavailable] = field(default_factory=dict)  # agents whose files did not load
    fingerprint: str = ""
    definitions: OrderedDict[str, str] = field(default_factory=OrderedDict)  # uri -> JSON text, LRU


class AgentLibrary:
    """See the module docstring. ``extra_agents`` are ``Agent`` objects (or ``(agent, origin)``
    pairs) from extensions (``context_harness.extensions``: code or entry points). ``strict``: an
    agent that does not load is a ``ConfigError``; otherwise (what a server uses) it is set aside
    as unavailable with its error and the others are served."""

    def __init__(self, config: Config, extra_agents: Iterable[Any] = (), *, strict: bool = True) -> None:
        self.config = config
        self.strict = strict
        self._python: list[tuple[Any, str]] = [_with_origin(a) for a in extra_agents]
        self._lock = threading.Lock()
        self._cache_lock = threading.Lock()  # the definitions LRU
        self._state = self._build(None)

    # -- building -----------------------------------------------------------------------------

    def _build(self, previous: _State | None) -> _State:
        """Read every source. An agent that does not load (syntax error, error at load, bad metadata,
        a name taken, an unknown skill) is set aside with its error; on a reload the version that
        loaded before keeps serving instead."""
        settings = load_settings(self.config)
        skills = load_skills(settings.skill_paths)
        watched: list[Path] = []
        for folder in settings.skill_paths:
            watched.append(folder)
            if folder.is_dir():
                watched.extend(p for p in folder.iterdir() if p.is_dir())
            watched.extend(skill_files(folder))
        specs: dict[str, AgentSpec] = {}
        broken: dict[str, Unavailable] = {}

        def add(name: str, key_path: str, make: Callable[[], AgentSpec | None]) -> None:
            try:
                spec = make()
                if spec is None:
                    return
                other = specs.get(spec.name)
                if other is not None:
                    raise ConfigError(f"agent '{spec.name}' is defined twice: {other.origin} and {spec.origin}")
                _check_skills(spec, skills)
            except ConfigError as exc:
                if self.strict:
                    raise
                kept = previous.specs.get(name) if previous is not None else None
                if kept is not None and kept.name not in specs:
                    log.error("agent %s not reloaded: %s; the previous version keeps serving", name, exc.message)
                    specs[kept.name] = kept
                    return
                broken[name] = Unavailable(kind="agent", name=name, key_path=key_path, variables=[],
                                           error=exc.message)
                return
            specs[spec.name] = spec

        for name, key_path, entry in settings.inline:
            add(name, key_path, partial(toml_spec, name, key_path, entry, settings.config_label))
        for name, script in settings.scripts:
            watched.append(script.path)
            add(name, f"agents.script.{name}", partial(lua_spec, name, script, self.config.lua))
        for folder in settings.agent_paths:
            files, dirs = markdown_files(folder)
            watched.append(folder)
            watched.extend(dirs)
            for path in files:
                watched.append(path)
                add(path.stem, "agents.paths", partial(markdown_spec, path))
        for agent, origin in self._python:
            add(str(getattr(agent, "name", origin)), origin, partial(python_spec, agent, origin))
        _log_set_aside(broken, previous.broken if previous is not None else {})

        ordered = sorted(specs)
        infos = [specs[n].info() for n in ordered]
        index = sorted([(n, AGENT_SCHEME + n, specs[n].description) for n in ordered]
                       + [(s.name, SKILL_SCHEME + s.name, s.description) for s in skills.values()])
        state = _State(specs={n: specs[n] for n in ordered}, skills=skills, infos=infos, index=index,
                       snapshot=_snapshot(dict.fromkeys(watched)), page_size=settings.page_size, broken=broken)
        digest = hashlib.sha256()
        for _, uri, _ in index:
            digest.update(self._read(state, uri).encode())
        digest.update("".join(sorted(broken)).encode())  # a file set aside or fixed is a change too
        state.fingerprint = digest.hexdigest()
        return state

    # -- cache invalidation -------------------------------------------------------------------

    def changed(self) -> bool:
        """True when an agent file, skill file or agent folder changed since the last (re)load."""
        snapshot = self._state.snapshot
        return any(_stat(Path(p)) != seen for p, seen in snapshot.items())

    def reload(self) -> bool:
        """Re-read every source; True when the agents or skills offered changed. A ``ConfigError``
        (e.g. a broken file) propagates and the previous definitions stay in place."""
        with self._lock:
            old = self._state
            self._state = self._build(old)
            return self._state.fingerprint != old.fingerprint

    def refresh(self) -> bool:
        """``changed()`` then ``reload()``: the one call a server's poll loop needs. A broken file
        is logged (once per change) and the previous definitions stay in place."""
        if not self.changed():
            return False
        try:
            return self.reload()
        except ConfigError as exc:
            log.error("agents not reloaded: %s", exc.message)
            with self._lock:
                state = self._state
                state.snapshot = _snapshot(Path(p) for p in state.snapshot)
            return False

    # -- listing ------------------------------------------------------------------------------

    def list(self) -> list[AgentInfo]:
        """Every agent, sorted by name (``GET /agents/list``, ``prompts/list``)."""
        return list(self._state.infos)

    def names(self) -> builtins.list[str]:
        return list(self._state.specs)

    def find(self, name: str) -> AgentInfo | None:
        spec = self._state.specs.get(name)
        return spec.info() if spec is not None else None

    def find_spec(self, name: str) -> AgentSpec | None:
        return self._state.specs.get(name)

    def spec(self, name: str) -> AgentSpec:
        spec = self._state.specs.get(name)
        if spec is None:
            missing = next((u for u in self.unavailable() if u.name == name), None)
            if missing is not None:
                raise NotConfigured(f"agent {name!r} is unavailable: {missing.message}")
            raise NotFound(f"unknown agent {name!r}" + _suggest(name, self._state.specs))
        return spec

    def unavailable(self) -> builtins.list[Unavailable]:
        """The agents set aside: their tables use unset environment variables, or their files did
        not load (until a reload loads them)."""
        return [u for u in self.config.unavailable if u.kind == "agent"] + list(self._state.broken.values())

    def tools(self, name: str) -> builtins.list[str]:
        """The tools agent ``name`` may use (``NotFound`` for an unknown agent): the tool scope."""
        return list(self.spec(name).tools)

    def skills(self) -> builtins.list[Skill]:
        return sorted(self._state.skills.values(), key=lambda s: s.name)

    @property
    def page_size(self) -> int:
        return self._state.page_size

    # -- resolving ----------------------------------------------------------------------------

    def _run(self, name: str, arguments: Mapping[str, Any] | None,
             context: AgentContext | None) -> tuple[AgentSpec, AgentPrompt, builtins.list[SkillOut]]:
        state = self._state
        spec = self.spec(name)
        args = spec.check_arguments(arguments)
        prompt = spec.resolver(args, context)
        skills = [SkillOut(**state.skills[s].as_dict()) for s in spec.enabled_skills()]
        return spec, prompt, skills

    def resolve(self, name: str, arguments: Mapping[str, Any] | None = None,
                context: AgentContext | None = None) -> AgentPrompt:
        """Run agent ``name``: ``{system (with its active skills), tools, messages}``. Blocking.

        Raises ``NotFound`` (unknown agent), ``BadRequest`` (arguments), ``AgentError``, ``Timeout``.
        """
        _, prompt, skills = self._run(name, arguments, context)
        return AgentPrompt(system=with_skills(prompt.system, skills), tools=prompt.tools, messages=prompt.messages)

    def compile(self, name: str, arguments: Mapping[str, Any] | None = None, format: str = "compiled",
                context: AgentContext | None = None) -> str | dict[str, Any]:
        """``agent_inject``: ``compiled`` -> one string (see ``agents.render``); ``structured`` ->
        ``{name, system, skills: [{name, description, instructions}], tools, messages}``."""
        if format not in FORMATS:
            raise BadRequest(f"format must be one of {', '.join(FORMATS)} (got {format!r})")
        spec, prompt, skills = self._run(name, arguments, context)
        if format == "compiled":
            return compiled_text(spec.name, prompt.system, skills, prompt.messages)
        return dump(StructuredAgent(name=spec.name, system=prompt.system, skills=skills, tools=prompt.tools,
                                    messages=prompt.messages))

    def complete(self, agent: str, argument: str, prefix: str = "") -> builtins.list[str]:
        """Completion values for an argument with known values (``enum``), filtered by ``prefix``."""
        spec = self.spec(agent)
        for arg in spec.arguments:
            if arg.name == argument and arg.enum is not None:
                lowered = (prefix or "").lower()
                return [v for v in arg.enum if v.lower().startswith(lowered)][:MAX_COMPLETIONS]
        return []

    # -- definitions and resources ------------------------------------------------------------

    def definition(self, name: str) -> dict[str, Any]:
        """``agent_get`` / ``agent://NAME``: name, description, source, tools, arguments, skills
        (with ``enabled``), the system prompt for static agents, and metadata when there is any."""
        return _definition(self.spec(name), self._state.skills)

    def list_resources(self, cursor: str | None = None, page_size: int | None = None,
                       numeric: bool = False) -> dict[str, Any]:
        """One page of ``agent://`` and ``skill://`` resources sorted by name:
        ``{"resources": [{uri, name, description, mimeType}], "nextCursor": str | None, "total": int}``.
        ``cursor`` is a ``nextCursor`` or a numeric offset (orchestr8's cursors); ``numeric`` makes
        ``nextCursor`` an offset too."""
        state = self._state
        size = state.page_size if page_size is None else page_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise BadRequest("page_size must be a positive integer")
        size = min(size, MAX_PAGE_SIZE)
        start = 0
        if (offset := plain_int(cursor)) is not None and len(cursor or "") < 10:
            start = min(offset, len(state.index))
        elif cursor:
            after = _decode_cursor(cursor)
            start = bisect_right([(n, u) for n, u, _ in state.index], after)
        rows = state.index[start:start + size]
        more = start + size < len(state.index)
        following = None
        if more and rows:
            following = str(start + size) if numeric else _encode_cursor(rows[-1][0], rows[-1][1])
        page = ResourcePage(
            resources=[ResourceEntry(uri=u, name=n, description=d or None, mime_type=JSON_MIME) for n, u, d in rows],
            next_cursor=following, total=len(state.index))
        return dump(page)

    def read_resource(self, uri: str) -> str:
        """The JSON text of ``agent://NAME`` or ``skill://NAME`` (``NotFound`` otherwise). Cached."""
        return self._read(self._state, uri)

    def _read(self, state: _State, uri: str) -> str:
        with self._cache_lock:
            cached = state.definitions.get(uri)
            if cached is not None:
                state.definitions.move_to_end(uri)
                return cached
        if uri.startswith(AGENT_SCHEME):
            spec = state.specs.get(uri[len(AGENT_SCHEME):])
            if spec is None:
                raise NotFound(f"unknown resource {uri!r}")
            data = _definition(spec, state.skills)
        elif uri.startswith(SKILL_SCHEME):
            skill = state.skills.get(uri[len(SKILL_SCHEME):])
            if skill is None:
                raise NotFound(f"unknown resource {uri!r}")
            data = skill.as_dict()
        else:
            raise NotFound(f"unknown resource {uri!r}: agent resources are agent://NAME and skill://NAME")
        text = json.dumps(data, ensure_ascii=False, indent=2)
        with self._cache_lock:
            state.definitions[uri] = text
            if len(state.definitions) > DEFINITION_CACHE:
                state.definitions.popitem(last=False)
        return text


def _with_origin(item: Any) -> tuple[Any, str]:
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], str):
        return item
    cls = item if isinstance(item, type) else type(item)
    return item, f"code ({cls.__module__}.{cls.__qualname__})"


def _log_set_aside(broken: Mapping[str, Unavailable], before: Mapping[str, Unavailable]) -> None:
    """Log each agent set aside (once per new error) and each one that loads again."""
    for name, missing in broken.items():
        if name not in before or before[name].error != missing.error:
            log.warning("agent %s is unavailable: %s", name, missing.message)
    for name in before:
        if name not in broken:
            log.info("agent %s loads again and is available", name)


def _check_skills(spec: AgentSpec, skills: Mapping[str, Skill]) -> None:
    for skill in spec.skills:
        if skill not in skills:
            known = ", ".join(sorted(skills)) or "none are installed; check [agents] skill_paths"
            raise ConfigError(f"{spec.origin}: agent '{spec.name}' uses unknown skill '{skill}' (known: {known})")
    for skill in spec.disabled_skills:
        if skill not in spec.skills:
            raise ConfigError(f"{spec.origin}: agent '{spec.name}' disables skill '{skill}', which it does not "
                              "list in skills")


def _definition(spec: AgentSpec, skills: Mapping[str, Skill]) -> dict[str, Any]:
    enabled = set(spec.enabled_skills())
    out: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "source": spec.source,
        "tools": list(spec.tools),
        "arguments": [a.definition() for a in spec.arguments],
        "skills": [{"name": s, "description": skills[s].description, "enabled": s in enabled} for s in spec.skills],
    }
    if spec.system_prompt is not None:
        out["system_prompt"] = spec.system_prompt
    if spec.metadata:
        out["metadata"] = dict(spec.metadata)
    return out


def _encode_cursor(name: str, uri: str) -> str:
    raw = json.dumps({"after": [name, uri]}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        after = decode_json(raw, "the cursor")["after"]
        name, uri = after
        if not isinstance(name, str) or not isinstance(uri, str):
            raise ValueError
        return name, uri
    except (binascii.Error, ValueError, KeyError, TypeError, BadRequest):
        raise BadRequest("invalid cursor; pass the nextCursor of a previous page") from None


def _suggest(name: str, known: Mapping[str, Any]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def build_agent_library(config: Config, extra_agents: Iterable[Any] = ()) -> AgentLibrary:
    """The agent library for ``config``: TOML, Lua and Markdown agents, skills and ``extra_agents``."""
    return AgentLibrary(config, extra_agents)


__all__ = ["AGENT_SCHEME", "FORMATS", "SKILL_SCHEME", "AgentLibrary", "build_agent_library"]
