"""``apply(config)``: the config with what the project's ``.ctx/`` and the registries bring.

Idempotent (a config is applied once); cheap when no registry is configured and there is no
``.ctx/`` folder. Called wherever a config becomes a knowledge base (``Harness``), is reloaded
(tools, sources) or runs one script (``ctx tool test``), so a registry script never runs without
its grant, nor without the consent (or the pin) its code is checked against (``check.py``). A copy
that is off for a reason the user should see (another copy than the one enabled, an edit) is
listed as unavailable with that reason; a connector that is off stands in the same way, so its
documents stay.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from context_harness.config import Config, ScriptConfig, ScriptConnectorConfig, Unavailable
from context_harness.registries.project import project_folder

if TYPE_CHECKING:  # imported once a config has registries or a project folder: cheap when it has none
    from context_harness.lua.grant import Grant
    from context_harness.registries.check import Verdict
    from context_harness.registries.resolve import Copy, Registries

log = logging.getLogger(__name__)
E = TypeVar("E", bound=ScriptConfig)


def apply(config: Config) -> Config:
    """Add the winning tools, project connectors and agent folders; grant every registry script."""
    if config.registries_applied:
        return config
    config.registries_applied = True
    if not config.registries.named() and not project_folder(config).is_dir():
        return config
    from context_harness.registries.resolve import Registries

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
        if ext.kind == "agent":
            if ext.script.parent not in agent_folders:
                agent_folders.append(ext.script.parent)
            continue
        if ext.kind == "connector" and win.level != "project":
            continue  # used once added to the config (an explicit table)
        verdict = known.verdict(win)
        if not verdict.on:
            _off(config, "tool" if ext.kind == "tool" else "connector", ext.name, ext.id, verdict)
        elif ext.kind == "tool":
            config.tools.script[ext.name] = _entry(ScriptConfig(path=ext.script), _grant(win, {}, verdict))
        else:
            config.connectors.script[ext.name] = _entry(ScriptConnectorConfig(path=ext.script),
                                                        _grant(win, {}, verdict))
    for group in (config.tools.script, config.connectors.script):
        for name, entry in list(group.items()):
            if entry.grant is None:
                _grant_explicit(known, entry, group is config.tools.script, name, config)
    _add_agent_folders(config, agent_folders)
    return config


def _add_agent_folders(config: Config, folders: list[Path]) -> None:
    """Add ``folders`` to ``[agents] paths`` (its defaults kept), leaving out any it already searches."""
    from context_harness.agents.settings import DEFAULT_AGENT_PATHS

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


def _grant(copy: Copy, values: dict[str, object], verdict: Verdict) -> Grant:
    """The copy's grant, held to the script's checked bytes when a consent or the pin vouches for them
    (a project file that needs no consent stays editable while a server runs)."""
    from context_harness.registries.resolve import grant_for

    return grant_for(copy, values, verdict.fingerprint.script_sha256 if verdict.consented or verdict.pinned else "")


def _off(config: Config, kind: Literal["tool", "connector"], name: str, ext_id: str, verdict: Verdict) -> None:
    """Leave a copy out; say why where the user looks when it is off for another reason than never having
    been enabled (a tool: the tool list; a connector: the sources, its documents kept)."""
    never_enabled = verdict.reason.startswith("asks for ")
    (log.debug if never_enabled else log.warning)("extension %s is off: %s", ext_id, verdict.reason)
    if kind == "connector":
        label = f"script:{name}"
    elif never_enabled:
        return  # `ctx registry list` says it is off
    else:
        label = name
    config.unavailable.append(Unavailable(kind=kind, name=label, key_path=f"{kind}s.script.{name}", variables=[],
                                          error=f"off: {verdict.reason}", fix="then restart a running server"))


def _grant_explicit(known: Registries, entry: ScriptConfig, tool: bool, name: str, config: Config) -> None:
    """An explicit table whose script is a registry's (``ctx registry add``) runs with that grant."""
    copy = known.copy_of_script(entry.path)
    kind = "tools" if tool else "connectors"
    if copy is not None:
        config.extension_origins[f"{kind}/{name}"] = copy.origin
        verdict = known.verdict(copy, added=True)
        if not verdict.on:  # edited in the copy: off, and said where the user looks
            del (config.tools.script if tool else config.connectors.script)[name]
            _off(config, "tool" if tool else "connector", name, copy.id, verdict)
            return
        entry.set_grant(_grant(copy, entry.extra, verdict))
        return
    registry = known.inside_copy(entry.path)
    if registry is not None:  # a file of a registry its manifest does not list: the pure tables only
        from context_harness.lua.grant import Grant

        entry.set_grant(Grant(f"{kind}/{name} (a file of registry {registry} not in its manifest)"))


__all__ = ["apply"]
