"""What ``ctx registry ...`` does: one function per command, returning plain data to render.

Registries are cloned and pinned on first use (``ensure``); nothing moves a pin but ``update``
with ``--accept`` (or ``auto_update`` when the update asks for nothing new). ``enable`` records a
consent bound to the enabled copy's code (``consent.py``); an update carries it to the new commit
only when the extension asks for nothing new.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_harness.config import Config, ScriptConfig
from context_harness.errors import BadRequest, ConfigError, NotFound
from context_harness.registries import configfile
from context_harness.registries.check import Verdict, needs_consent
from context_harness.registries.consent import Consent
from context_harness.registries.manifest import MANIFEST, Manifest
from context_harness.registries.manifest import parse as parse_manifest
from context_harness.registries.resolve import Copy, Registries, Resolution, project_folder, table_key
from context_harness.registries.results import (
    Added,
    ExtensionInfo,
    ExtensionRow,
    Initialised,
    Listing,
    Overridden,
    RegistryRow,
    Removed,
    Switched,
    UpdatePlanOut,
)
from context_harness.registries.store import Store

STARTER_NAME = "community"


CHECKOUT_STARTER = Path(__file__).resolve().parents[2] / "registry"  # a checkout's (or an editable install's)
PACKAGED_STARTER = Path(__file__).resolve().parents[1] / "starter_registry"  # a wheel's (pyproject force-include)


def starter_registry() -> Path | None:
    """The starter registry that ships with context-harness, as a folder inside a git repository (a
    registry is pinned to commits): a checkout's top-level ``registry/``; for an installed wheel, a git
    copy of the packaged one in the user data folder, committed again when an upgrade changed it. None
    when neither is there."""
    if (CHECKOUT_STARTER / MANIFEST).is_file():
        return CHECKOUT_STARTER
    if (PACKAGED_STARTER / MANIFEST).is_file():
        return _git_copy(PACKAGED_STARTER, _starter_copy())
    return None


def _starter_copy() -> Path:
    from context_harness.config import user_data_dir

    return user_data_dir() / "starter-registry"


def _refresh_starter(config: Config) -> None:
    """Before an update: a registry that is an installed wheel's starter copy takes in what an upgrade of
    context-harness changed (a new commit there, which the update then offers like any other)."""
    if (CHECKOUT_STARTER / MANIFEST).is_file() or not (PACKAGED_STARTER / MANIFEST).is_file():
        return
    copy = _starter_copy()
    if any(Path(r.url).expanduser() == copy for r in config.registries.named().values()):
        _git_copy(PACKAGED_STARTER, copy)


def _git_copy(source: Path, dest: Path) -> Path:
    """``dest`` holding exactly the files of ``source``, committed in a git repository of its own."""
    from context_harness import __version__
    from context_harness.registries.store import git

    dest.mkdir(parents=True, exist_ok=True)
    if not (dest / ".git").is_dir():
        git(["init", "--quiet"], cwd=dest)
    for entry in dest.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    shutil.copytree(source, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(["add", "--all"], cwd=dest)
    if git(["status", "--porcelain"], cwd=dest).strip():
        git(["-c", "user.name=context-harness", "-c", "user.email=context-harness@localhost", "-c",
             "commit.gpgsign=false", "commit", "--quiet", "--no-verify", "-m",
             f"The starter registry of context-harness {__version__}"], cwd=dest)
    return dest


def _config_file(config: Config) -> Path:
    if config.source_path is None:
        raise BadRequest("this command edits the config file; run it with a config file (`ctx init`, --config)")
    return config.source_path


def ensure(config: Config) -> Registries:
    """Clone and pin every configured registry that is not yet (a pinned one whose copy is gone is
    cloned again at its pin); then what is known."""
    store = Store(config)
    state = store.state()
    changed = False
    for name, registry in config.registries.named().items():
        pin = state.pins.get(name)
        if pin is not None and (store.checkout(name) / ".git").exists():
            continue
        fresh = store.clone(name, registry)
        if pin is not None:
            store.move(name, pin.commit)
        else:
            state.pins[name] = fresh
        changed = True
    for name in [n for n in state.pins if n not in config.registries.named()]:
        del state.pins[name]  # removed from the config
        changed = True
    if changed:
        store.save(state)
    return Registries(config)


def init(config: Config) -> Initialised:
    """Add ``[registries.community]`` pointing at the starter registry of this install."""
    path = _config_file(config)
    if STARTER_NAME in config.registries.named():
        raise BadRequest(f"[registries.{STARTER_NAME}] is already in {path}; `ctx registry list` shows it")
    starter = starter_registry()
    if starter is None:
        raise NotFound("no starter registry in this install of context-harness (a checkout's registry/ folder, or "
                       "context_harness/starter_registry in the package; reinstall it); add one by URL instead: "
                       f"[registries.{STARTER_NAME}] url = \"<git URL or path>\" in {path}")
    configfile.append_table(path, f"registries.{STARTER_NAME}", (
        "# Extensions (connectors, tools, agents) from the starter registry; `ctx registry list` shows them.\n"
        f"[registries.{STARTER_NAME}]\nurl = \"{starter.as_posix()}\"\n"))
    from context_harness.config import load_file

    pinned = ensure(load_file(path)).pin(STARTER_NAME)
    return {"name": STARTER_NAME, "url": starter.as_posix(), "config": str(path),
            "commit": pinned.commit if pinned else None}


def listing(config: Config) -> Listing:
    known = ensure(config)
    registries: list[RegistryRow] = []
    for name, registry in known.ordered():
        pin = known.pin(name)
        manifest = known.manifests.get(name, Manifest())
        registries.append({"name": name, "url": registry.url, "tier": registry.tier,
                           "commit": pin.commit if pin else None, "description": manifest.description,
                           "extensions": len(manifest.extensions)})
    return {"registries": registries, "extensions": [_summary(known, r) for r in known.resolutions().values()
                                                     if r.winner.extension is not None or len(r.copies) > 1],
            "errors": known.errors}


def _summary(known: Registries, resolution: Resolution) -> ExtensionRow:
    ext = next((c.extension for c in resolution.copies if c.extension is not None), None)
    entry = ext.entry if ext is not None else None
    state, verdict = _state(known, resolution)
    return {"id": resolution.id, "description": entry.description if entry else "",
            "tags": entry.tags if entry else [], "origin": resolution.winner.origin,
            "capabilities": entry.capabilities if entry else [], "state": state,
            "on": verdict.on if verdict is not None else state == "on",
            "off_reason": verdict.reason if verdict is not None and not verdict.on else None,
            "new_asks": verdict.new_asks if verdict is not None else []}


def _checked(known: Registries, resolution: Resolution) -> tuple[Copy | None, bool]:
    """The copy whose code runs for ``resolution`` (the winner; for an explicit table, the registry copy
    its path points at, if any) and whether the user added it to the config."""
    win = resolution.winner
    if win.extension is not None:
        return win, False
    kind, name = resolution.id.split("/", 1)
    tables: dict[str, dict[str, ScriptConfig]] = {"tools": dict(known.config.tools.script),
                                                  "connectors": dict(known.config.connectors.script)}
    entry = tables.get(kind, {}).get(name)
    return (known.copy_of_script(entry.path), True) if entry is not None else (None, True)


def _asks_to_approve(config: Config, script: Path) -> str:
    """What the listing adds for an agent file that says ``approve: writes``: a registry's file may ask
    for that, only the user's config grants it (``[agents] approve_writes``)."""
    from context_harness.agents.base import asks_to_write_unasked
    from context_harness.agents.settings import load_settings

    name = asks_to_write_unasked(script)
    if name is None:
        return ""
    if name in load_settings(config).approve_writes:
        return "; writes without asking (granted by your config's [agents] approve_writes)"
    return ("; asks to write without asking: not granted, each write is asked (your config's [agents] "
            "approve_writes grants it)")


def _state(known: Registries, resolution: Resolution) -> tuple[str, Verdict | None]:
    """What ``ctx registry list`` shows as the state, and the verdict behind it (None: nothing checked)."""
    copy, added = _checked(known, resolution)
    if copy is None or copy.extension is None:
        return "explicit config", None
    if copy.extension.kind == "agent":
        return "on" + _asks_to_approve(known.config, copy.extension.script), None
    if copy.extension.kind == "connector" and copy.level != "project" and not added:
        return "available (`ctx registry add " + resolution.id + "` to use it)", None
    verdict = known.verdict(copy, added)
    if verdict.on:
        return ("explicit config" if added else "on"), verdict
    return ("explicit config, " if added else "") + f"off ({verdict.reason})", verdict


def search(config: Config, text: str) -> list[ExtensionRow]:
    words = text.lower().split()
    found = []
    for item in listing(config)["extensions"]:
        haystack = " ".join([item["id"], item["description"], *item["tags"]]).lower()
        if all(word in haystack for word in words):
            found.append(item)
    return found


def _resolution(known: Registries, ext_id: str) -> Resolution:
    found = known.resolutions().get(ext_id)
    if found is None:
        known_ids = ", ".join(sorted(known.resolutions())) or "none (run `ctx registry init`, or add [registries.NAME])"
        raise NotFound(f"no extension {ext_id!r}; ids look like connectors/rss, tools/web-fetch (known: {known_ids})")
    return found


def info(config: Config, ext_id: str) -> ExtensionInfo:
    known = ensure(config)
    resolution = _resolution(known, ext_id)
    ext = next((c.extension for c in resolution.copies if c.extension is not None), None)
    config_name = config.source_path.name if config.source_path else "the config"
    state, verdict = _state(known, resolution)
    consent = known.state.consents.get(ext_id)
    return {"id": ext_id, "manifest": ext.entry.model_dump() if ext else None,
            "script": str(ext.script) if ext else None,
            "winner": resolution.winner.origin, "why": resolution.reason(config_name),
            "copies": [{"origin": c.origin, "commit": c.commit} for c in resolution.copies],
            "state": state, "sha256": verdict.fingerprint.digest if verdict is not None else None,
            "enabled": ({"source": consent.source, "commit": consent.commit, "sha256": consent.digest,
                         "asks": consent.asks} if consent is not None and consent.bound else None)}


def add(config: Config, ext_id: str) -> Added:
    """Write ``[connectors.script.NAME]`` (or ``[tools.script.NAME]``) for a registry's extension, its
    ``config`` keys as commented placeholders."""
    path = _config_file(config)
    known = ensure(config)
    resolution = _resolution(known, ext_id)
    copy = next((c for c in resolution.copies if c.extension is not None), None)
    if copy is None or copy.extension is None or copy.extension.kind == "agent":
        raise BadRequest(f"{ext_id}: only connectors and tools of a registry are added to the config (agents and "
                         "tools are found by themselves)")
    ext = copy.extension
    key = table_key(ext_id)
    script = os.path.relpath(ext.script, path.parent) if ext.script.is_relative_to(path.parent) else str(ext.script)
    lines = [f"# {ext_id} from {copy.origin} (`ctx registry info {ext_id}`); runs with only: "
             f"{', '.join(ext.entry.capabilities) or 'the pure host tables'}", f"[{key}]",
             f"path = \"{Path(script).as_posix()}\""]
    lines += [f"# {k} = ...    # required: set it (its value: `ctx registry info {ext_id}` and the extension's docs)"
              for k in ext.entry.config]
    configfile.append_table(path, key, "\n".join(lines) + "\n")
    return {"id": ext_id, "name": ext.name, "table": key, "config": str(path), "set": ext.entry.config}


@dataclass
class UpdatePlan:
    registry: str
    old: str
    new: str
    changed: list[str] = field(default_factory=list)
    asks: dict[str, list[str]] = field(default_factory=dict)  # extension id -> what it newly asks for
    applied: bool = False
    note: str = ""

    def as_dict(self) -> UpdatePlanOut:
        return {"registry": self.registry, "from": self.old, "to": self.new, "changed": self.changed,
                "new_asks": self.asks, "applied": self.applied, "note": self.note}


def update(config: Config, name: str | None, accept: bool) -> list[UpdatePlanOut]:
    """Fetch each registry (or ``name``); show changed files and what extensions newly ask for;
    move the pin with ``accept``, or with ``auto_update`` when nothing new is asked."""
    _refresh_starter(config)
    known = ensure(config)
    named = config.registries.named()
    if name is not None and name not in named:
        raise NotFound(f"no [registries.{name}] in the config (configured: {', '.join(named) or 'none'})")
    plans = []
    for reg_name, registry in named.items():
        if name is not None and reg_name != name:
            continue
        plan = _plan(known, reg_name)
        if plan.old != plan.new and (accept or (registry.auto_update and not plan.asks)):
            if not registry.readonly and known.store.dirty(reg_name):
                plan.note = (f"the copy at {known.store.checkout(reg_name)} has local edits (readonly = false); "
                             "commit or discard them first")
            else:
                enabled = _covered(known, reg_name)
                known.store.move(reg_name, plan.new)
                known.state.pins[reg_name].commit = plan.new
                plan.note = _carry(config, known, reg_name, enabled)
                known.store.save(known.state)
                plan.applied = True
        elif plan.old != plan.new:
            plan.note = ("not applied: run `ctx registry update " + reg_name + " --accept`"
                         + (" (it asks for new capabilities or hosts)" if plan.asks and registry.auto_update else ""))
        plans.append(plan.as_dict())
    return plans


def _covered(known: Registries, name: str) -> dict[str, Consent]:
    """The consents that cover registry ``name``'s copies as they are (before an update moves them)."""
    out = {}
    for ext_id, ext in known.manifests.get(name, Manifest()).extensions.items():
        consent = known.state.consents.get(ext_id)
        if consent is not None and consent.source == f"registry {name}" and known.checker.verdict(
                ext, "registry", name).consented:
            out[ext_id] = consent
    return out


def _carry(config: Config, known: Registries, name: str, enabled: dict[str, Consent]) -> str:
    """After registry ``name`` moved: bind each consent that covered its old copy to the new one, unless
    the extension now asks for more (then it is off until enabled again; the note says so)."""
    fresh = Registries(config)
    fresh.state.pins[name] = known.state.pins[name]
    stays_off = []
    for ext_id, consent in enabled.items():
        ext = fresh.manifests.get(name, Manifest()).extensions.get(ext_id)
        if ext is None:
            continue
        grown = sorted(ext.asks - set(consent.asks))
        if grown:
            stays_off.append(f"{ext_id} is off until `ctx registry enable {ext_id}` (it asks for new: "
                             f"{', '.join(grown)})")
            continue
        print_ = fresh.checker.verdict(ext, "registry", name).fingerprint
        known.state.consents[ext_id] = Consent.of(consent.source, known.state.pins[name].commit, ext, print_)
    return "; ".join(stays_off)


def _plan(known: Registries, name: str) -> UpdatePlan:
    store, pin = known.store, known.state.pins[name]
    new = store.fetch(name)
    plan = UpdatePlan(name, pin.commit, new)
    if new == pin.commit:
        return plan
    plan.changed = store.changed_files(name, pin.commit, new, pin.root)
    manifest_path = f"{pin.root}/{MANIFEST}" if pin.root else MANIFEST
    root = store.root(name, pin)

    def manifest_at(commit: str) -> Manifest:
        text = store.show(name, commit, manifest_path)
        if text is None:
            return Manifest()
        try:
            return parse_manifest(text, label=f"registry {name} at {commit[:7]}", root=root, check_files=False)
        except ConfigError:
            return Manifest()

    before, after = manifest_at(pin.commit), manifest_at(new)
    for ext_id, ext in after.extensions.items():
        old = before.extensions.get(ext_id)
        fresh = sorted(ext.asks - (old.asks if old is not None else set()))
        if fresh:
            plan.asks[ext_id] = fresh
    return plan


def remove(config: Config, name: str) -> Removed:
    path = _config_file(config)
    if not configfile.remove_table(path, f"registries.{name}"):
        raise NotFound(f"no [registries.{name}] in {path}")
    store = Store(config)
    state = store.state()
    state.pins.pop(name, None)
    state.consents = {i: c for i, c in state.consents.items() if c.source != f"registry {name}"}
    store.save(state)
    store.delete(name)
    return {"name": name, "config": str(path)}


def set_enabled(config: Config, ext_id: str, on: bool) -> Switched:
    """Enable: record a consent bound to the copy that runs for ``ext_id`` now (its source, commit and
    fingerprint); disable: forget it."""
    known = ensure(config)
    resolution = _resolution(known, ext_id)
    if not on:
        known.state.consents.pop(ext_id, None)
        known.store.save(known.state)
        ext = resolution.winner.extension
        return {"id": ext_id, "enabled": False, "capabilities": ext.entry.capabilities if ext else [],
                "hosts": ext.entry.hosts if ext else [], "env": ext.entry.env if ext else []}
    copy, added = _checked(known, resolution)
    ext = copy.extension if copy is not None else None
    if copy is None or ext is None or ext.kind == "agent":
        raise BadRequest(f"{ext_id} needs no enabling: only registry tools (and project connectors) that ask for "
                         f"http or env do, and copies edited since their pin ({resolution.winner.origin} wins)")
    verdict = known.verdict(copy, added)
    if verdict.on and not verdict.consented and not needs_consent(ext, copy.level, added):
        raise BadRequest(f"{ext_id} needs no enabling: only registry tools (and project connectors) that ask for "
                         f"http or env do, and copies edited since their pin ({copy.origin} wins; it is on)")
    known.state.consents[ext_id] = Consent.of(copy.source, copy.commit, ext, verdict.fingerprint)
    known.store.save(known.state)
    return {"id": ext_id, "enabled": True, "capabilities": ext.entry.capabilities, "hosts": ext.entry.hosts,
            "env": ext.entry.env, "origin": copy.origin, "sha256": verdict.fingerprint.digest,
            "was": verdict.reason if not verdict.on else None}


def override(config: Config, ext_id: str) -> Overridden:
    """Copy a registry extension into the project's ``.ctx/`` (its folder, and its manifest entry
    into ``.ctx/registry.toml``) to edit it there; the project copy then wins."""
    known = ensure(config)
    resolution = _resolution(known, ext_id)
    copy = next((c for c in resolution.copies if c.level not in ("explicit", "project")), None)
    if copy is None or copy.extension is None:
        raise BadRequest(f"{ext_id}: no registry copy to override ({resolution.winner.origin} wins)")
    ext = copy.extension
    project = project_folder(config)
    target = project / ext_id
    if target.exists():
        raise BadRequest(f"{target} already exists; edit it there (or delete it to copy again)")
    source_dir = ext.script.parent
    if source_dir.name == ext.name:
        shutil.copytree(source_dir, target)
        script = target / ext.script.name
    else:
        target.mkdir(parents=True)
        script = target / ext.script.name
        shutil.copy2(ext.script, script)
    entry = ext.entry.model_copy(update={"path": script.relative_to(project).as_posix()})
    block = [f"[extensions.\"{ext_id}\"]  # copied from {copy.origin} by `ctx registry override`"]
    block += [f"{k} = {_toml(v)}" for k, v in entry.model_dump().items()]
    listed = project / MANIFEST
    text = listed.read_text(encoding="utf-8") if listed.is_file() else ""
    listed.write_text(text.rstrip("\n") + ("\n\n" if text.strip() else "") + "\n".join(block) + "\n", encoding="utf-8")
    return {"id": ext_id, "copied_to": str(target), "script": str(script)}


def _toml(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


__all__ = ["add", "ensure", "info", "init", "listing", "override", "remove", "search", "set_enabled",
           "starter_registry", "update"]
