"""``apply(config)``: the config with what the project's ``.ctx/`` and the registries bring.

Idempotent (a config is applied once); cheap when no registry is configured and there is no
``.ctx/`` folder. Called wherever a config becomes a knowledge base (``Harness``), is reloaded
(tools, sources) or runs one script (``ctx tool test``), so a registry script never runs without
its grant.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TypeVar

from context_harness.agents.settings import DEFAULT_AGENT_PATHS
from context_harness.config import Config, ScriptConfig, ScriptConnectorConfig
from context_harness.lua.grant import Grant
from context_harness.registries.resolve import Registries, grant_for, needs_enable, project_folder

log = logging.getLogger(__name__)
E = TypeVar("E", bound=ScriptConfig)


def apply(config: Config) -> Config:
    """Add the winning tools, project connectors and agent folders; grant every registry script."""
    if config.registries_applied:
        return config
    config.registries_applied = True
    if not config.registries.named() and not project_folder(config).is_dir():
        return config
    known = Registries(config)
    for error in known.errors:  # a broken entry is left out; the others serve
        log.warning("extension registry: %s", error)
    agent_folders: list[Path] = []
    for resolution in known.resolutions().values():
        win = resolution.winner
        ext = win.extension
        if ext is None:
            continue
        config.extension_origins[ext.id] = win.origin
        if ext.kind == "tool" and (not needs_enable(ext.entry) or known.enabled(ext.id)):
            config.tools.script[ext.name] = _entry(ScriptConfig(path=ext.script), grant_for(win, {}))
        elif ext.kind == "connector" and win.level == "project":
            config.connectors.script[ext.name] = _entry(ScriptConnectorConfig(path=ext.script), grant_for(win, {}))
        elif ext.kind == "agent" and ext.script.parent not in agent_folders:
            agent_folders.append(ext.script.parent)
    for group in (config.tools.script, config.connectors.script):
        for name, entry in group.items():
            if entry.grant is None:
                _grant_explicit(known, entry, group is config.tools.script, name, config)
    _add_agent_folders(config, agent_folders)
    return config


def _add_agent_folders(config: Config, folders: list[Path]) -> None:
    """Add ``folders`` to ``[agents] paths`` (its defaults kept), leaving out any it already searches."""
    agents = config.agents
    paths = agents.get("paths")
    if paths is None:
        paths = list(DEFAULT_AGENT_PATHS) if config.source_path is not None else []
    searched = {(config.base_dir / Path(p).expanduser()).resolve() for p in paths}
    extra = [str(p) for p in folders if p.resolve() not in searched]
    if extra:
        agents["paths"] = [*paths, *extra]


def _entry(entry: E, grant: Grant) -> E:
    entry.set_grant(grant)
    return entry


def _grant_explicit(known: Registries, entry: ScriptConfig, tool: bool, name: str, config: Config) -> None:
    """An explicit table whose script is a registry's (``ctx registry add``) runs with that grant."""
    copy = known.copy_of_script(entry.path)
    kind = "tools" if tool else "connectors"
    if copy is not None:
        entry.set_grant(grant_for(copy, entry.extra))
        config.extension_origins[f"{kind}/{name}"] = copy.origin
        return
    registry = known.inside_copy(entry.path)
    if registry is not None:  # a file of a registry its manifest does not list: the pure tables only
        entry.set_grant(Grant(f"{kind}/{name} (a file of registry {registry} not in its manifest)"))


__all__ = ["apply"]
