"""The one tool set: every tool, built-ins, agent tools, extension tools and the Lua tools of
``[tools.script.NAME]``, side by side.

The composition root (``catalog.Catalog``) adds the built-ins, agent tools and extension tools, then
``load_scripts`` registers every Lua tool the config declares the same way. A Lua tool that does not
load (syntax error, error at load, bad metadata, another tool's name) is set aside as unavailable
with its error, as one with an unset ``${VAR}`` is: ``unavailable()`` lists it, the rest serves,
and the next ``reload()`` after its file changes tries it again.
While serving, ``reload()`` (blocking; run it in a worker thread) re-reads the config file and the
tool scripts when they changed and re-registers what differs; the catalog announces the returned
``ToolChanges`` to clients (``tools/list_changed``). A script or config that fails to load during a
reload is logged and the previous version keeps serving.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

from context_harness import config as config_mod
from context_harness.config import Config, LuaConfig, ScriptConfig, Unavailable
from context_harness.errors import ConfigError, HarnessError
from context_harness.lua.bridge import ScriptContext
from context_harness.lua.tools import LuaTool
from context_harness.registries.apply import apply as apply_registries
from context_harness.tools.base import Tool, ToolChanges
from context_harness.tools.script import ScriptCalls, ScriptTool

log = logging.getLogger(__name__)


def _digest(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _attempt_key(entry: ScriptConfig, lua: LuaConfig) -> str:
    """Identifies one load attempt: the entry, the [lua] section and the script's bytes."""
    text = entry.model_dump_json() + lua.model_dump_json() + (_digest(entry.path) or "missing")
    return hashlib.sha256(text.encode()).hexdigest()


def _unavailable(config: Config | None) -> dict[str, Unavailable]:
    return {u.name: u for u in (config.unavailable if config is not None else []) if u.kind == "tool"}


def load_script_tool(name: str, entry: ScriptConfig, lua: LuaConfig, context: ScriptContext | None,
                     calls: ScriptCalls | None = None) -> ScriptTool:
    """One ``[tools.script.NAME]`` entry -> a ``ScriptTool`` (``ConfigError`` if it cannot load);
    ``calls``: the admission its calls share with the set's other Lua tools."""
    lua_tool = LuaTool(name, entry, lua, max_instances=lua.max_calls_per_tool)
    return ScriptTool(lua_tool, context, calls=calls, lua_config=lua)


class ToolSet:
    """Tools by name. ``build`` fills it from a config; ``reload`` keeps the Lua tools current."""

    def __init__(self, config: Config | None = None, context: ScriptContext | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._lock = threading.Lock()
        self._reloading = threading.Lock()
        self.config = config
        self.context = context
        self.config_path: Path | None = config.source_path if config is not None else None
        self._config_digest = _digest(self.config_path)
        self._bad_config: str | None = None
        # desired state (the latest config that loaded) and loaded state (what each Lua tool was built from)
        self._desired: dict[str, ScriptConfig] = dict(config.tools.script) if config is not None else {}
        self._desired_lua = config.lua if config is not None else LuaConfig()
        self._loaded: dict[str, tuple[ScriptConfig, LuaConfig]] = {}
        self._failed: dict[str, str] = {}  # name -> attempt key that failed (not retried until it changes)
        self._unavailable = _unavailable(config)
        self._broken: dict[str, Unavailable] = {}  # never loaded: the file's error (retried when it changes)
        self.calls = ScriptCalls()  # every Lua tool's calls, apart from anyio's default thread limiter

    # -- building ---------------------------------------------------------------------------

    def load_scripts(self) -> None:
        """Register every Lua tool of the config (at start-up); one that does not load is set aside
        as unavailable with its error and logged, and the others are registered."""
        for name, entry in sorted(self._desired.items()):
            try:
                tool = load_script_tool(name, entry, self._desired_lua, self.context, self.calls)
                self.add(tool)
            except HarnessError as exc:
                self._set_aside(name, entry, exc.message)
                continue
            self._loaded[name] = (entry, self._desired_lua)

    def _set_aside(self, name: str, entry: ScriptConfig, error: str) -> None:
        """Lua tool ``name`` did not load: list it as unavailable; retry when its file changes."""
        self._failed[name] = _attempt_key(entry, self._desired_lua)
        missing = Unavailable(kind="tool", name=name, key_path=f"tools.script.{name}", variables=[], error=error)
        self._broken[name] = missing
        log.warning("Lua tool %s is unavailable: %s", name, missing.message)

    # -- the set ---------------------------------------------------------------------------

    def add(self, tool: Tool, *, replace: bool = False) -> None:
        with self._lock:
            existing = self._tools.get(tool.name)
            if existing is not None and not replace:
                kind = "built-in" if existing.builtin else "Lua"
                raise ConfigError(f"a {kind} tool named {tool.name!r} is already registered; choose another name")
            self._tools[tool.name] = tool

    def remove(self, name: str) -> bool:
        with self._lock:
            return self._tools.pop(name, None) is not None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def unavailable(self) -> list[Unavailable]:
        """The Lua tools set aside: their tables use unset environment variables, or their files did
        not load (until a reload loads them)."""
        merged = {**self._broken, **self._unavailable}
        return sorted(merged.values(), key=lambda u: u.name)

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    # -- reloading --------------------------------------------------------------------------

    def reload(self) -> ToolChanges:
        """Re-read a changed config file and changed tool scripts; re-register what differs.

        Blocking (reads files, loads scripts): call from a worker thread. Never raises for a bad
        config or script: it logs a warning once per change and keeps the previous version. One
        reload at a time: the watcher's and the console's (after an edit) may overlap.
        """
        with self._reloading:
            return self._reload()

    def _reload(self) -> ToolChanges:
        digest = _digest(self.config_path)
        if self.config_path is not None and digest not in (self._config_digest, self._bad_config):
            try:
                fresh = apply_registries(config_mod.load_file(self.config_path))
            except HarnessError as exc:
                log.warning("config changed but cannot be loaded; keeping the current tools: %s", exc.message)
                self._bad_config = digest
            else:
                self._config_digest, self._bad_config = digest, None
                self._desired, self._desired_lua = dict(fresh.tools.script), fresh.lua
                self._unavailable = _unavailable(fresh)
        changes = ToolChanges()
        for name in sorted(set(self._loaded) | set(self._desired)):
            entry, current = self._desired.get(name), self._tools.get(name)
            if entry is None:
                self._loaded.pop(name, None)
                self._failed.pop(name, None)
                self._broken.pop(name, None)
                if isinstance(current, ScriptTool) and self.remove(name):
                    changes.removed.append(name)
                continue
            if (self._loaded.get(name) == (entry, self._desired_lua) and isinstance(current, ScriptTool)
                    and not current.lua.script.changed()):
                continue
            key = _attempt_key(entry, self._desired_lua)
            if self._failed.get(name) == key:
                continue
            if current is not None and not isinstance(current, ScriptTool):
                self._set_aside(name, entry, f"a built-in or extension tool named {name!r} is already "
                                             "registered; choose another name")
                continue
            try:
                tool = load_script_tool(name, entry, self._desired_lua, self.context, self.calls)
            except HarnessError as exc:
                if current is None:
                    self._set_aside(name, entry, exc.message)
                    continue
                self._failed[name] = key
                log.warning("Lua tool %s not reloaded: %s; the previous version keeps serving", name, exc.message)
                continue
            self._failed.pop(name, None)
            if self._broken.pop(name, None) is not None:
                log.info("Lua tool %s loads again and is available", name)
            self._loaded[name] = (entry, self._desired_lua)
            self.add(tool, replace=True)
            (changes.replaced if current is not None else changes.added).append(tool)
        if changes:
            log.info("tools reloaded: %s", changes.summary())
        return changes


__all__ = ["ToolSet", "load_script_tool"]
