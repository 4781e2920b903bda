"""Which copy of each extension wins, and why; and the config a registry adds to.

Precedence, best first: explicit config (``[tools.script.NAME]``, ``[connectors.script.NAME]``,
agents of ``[agents]``) > the project's ``.ctx/`` > personal > company > community registries
(within a tier, config order). ``apply(config)`` then adds to the config what the winners bring:

- tools from the project and from registries, except one asking for ``http`` or ``env`` that was
  not enabled (``ctx registry enable tools/NAME``) and one that is not the copy enabled, or not as its
  registry's pinned commit has it (``check.py``: consent is bound to the code);
- the project's ``.ctx/connectors`` (one asking for ``http`` or ``env`` once enabled; registry
  connectors only when the user adds them: ``ctx registry add``);
- the folders of agent files;
- to every script from a registry or the project's ``.ctx/`` (an explicit table pointing into a
  registry's copy included), the ``Grant`` of its manifest entry: nothing beyond it runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from context_harness.config import AGENT_RESERVED, Config, RegistryConfig
from context_harness.errors import ConfigError
from context_harness.lua.grant import Grant
from context_harness.lua.netpolicy import parse_rule
from context_harness.registries.check import Checker, Verdict
from context_harness.registries.consent import source_of
from context_harness.registries.manifest import CONFIG_HOST, MANIFEST, Extension, ExtensionEntry, Manifest, load
from context_harness.registries.manifest import parse as parse_manifest
from context_harness.registries.project import project_folder
from context_harness.registries.store import Pin, State, Store

log = logging.getLogger(__name__)

LEVELS = ("explicit", "project", "personal", "company", "community")
PROJECT_FILES = {"connectors": ("connector.lua", ".lua"), "tools": ("tool.lua", ".lua"), "agents": ("agent.md", ".md")}


@dataclass
class Copy:
    """One copy of an extension: where it is defined, and (not explicit) its manifest entry."""

    id: str
    level: str
    extension: Extension | None = None
    registry: str | None = None
    commit: str | None = None

    @property
    def origin(self) -> str:
        if self.level == "explicit":
            return "explicit config"
        if self.level == "project":
            return "project .ctx/"
        return f"registry {self.registry} at {(self.commit or '')[:7]}"

    @property
    def owner(self) -> str:
        return f"{self.id} ({self.source})"

    @property
    def source(self) -> str:
        """Where it comes from, as a consent records it: ``registry NAME`` or ``project .ctx/``."""
        return source_of(self.level, self.registry)


@dataclass
class Resolution:
    id: str
    copies: list[Copy]

    @property
    def winner(self) -> Copy:
        return self.copies[0]

    def reason(self, config_name: str) -> str:
        win = self.winner
        what = f"explicit [{table_key(self.id)}] in {config_name}" if win.level == "explicit" else win.origin
        if len(self.copies) == 1:
            return f"{what} is the only copy"
        return f"{what} overrides " + ", ".join(c.origin for c in self.copies[1:])


def table_key(ext_id: str) -> str:
    kind, name = ext_id.split("/", 1)
    return {"tools": f"tools.script.{name}", "connectors": f"connectors.script.{name}"}.get(kind, f"agents.{name}")


@dataclass
class Registries:
    """Everything known about a config's registries at one moment (reads the copies and the pins)."""

    config: Config
    store: Store = field(init=False)
    state: State = field(init=False)
    manifests: dict[str, Manifest] = field(default_factory=dict)
    project: Manifest = field(default_factory=Manifest)
    errors: list[str] = field(default_factory=list)
    checker: Checker = field(init=False)

    def __post_init__(self) -> None:
        self.store = Store(self.config)
        self.state = self.store.state()
        for name, _ in self.ordered():
            pin = self.state.pins.get(name)
            if pin is None:
                continue
            try:
                manifest = load(self.store.root(name, pin), f"registry {name}")
            except ConfigError as exc:
                self.errors.append(exc.message)
                continue
            self.manifests[name] = manifest
            self.errors.extend(manifest.errors)
        self.project = project_manifest(project_folder(self.config))
        self.errors.extend(self.project.errors)
        self.checker = Checker(self.store, self.state, project_folder(self.config), self.manifests)

    def ordered(self) -> list[tuple[str, RegistryConfig]]:
        """The configured registries, best first: by tier, then config order."""
        named = list(self.config.registries.named().items())
        return sorted(named, key=lambda item: LEVELS.index(item[1].tier))

    def pin(self, name: str) -> Pin | None:
        return self.state.pins.get(name)

    def resolutions(self) -> dict[str, Resolution]:
        copies: dict[str, list[Copy]] = {}
        for ext_id in explicit_ids(self.config):
            copies.setdefault(ext_id, []).append(Copy(ext_id, "explicit"))
        for ext in self.project.extensions.values():
            copies.setdefault(ext.id, []).append(Copy(ext.id, "project", ext))
        for name, registry in self.ordered():
            manifest, pin = self.manifests.get(name), self.pin(name)
            if manifest is None or pin is None:
                continue
            for ext in manifest.extensions.values():
                copies.setdefault(ext.id, []).append(Copy(ext.id, registry.tier, ext, name, pin.commit))
        return {ext_id: Resolution(ext_id, found) for ext_id, found in sorted(copies.items())}

    def copy_of_script(self, path: Path) -> Copy | None:
        """The registry copy whose script is ``path`` (an explicit table may point at one; a project
        file configured explicitly is the user's own)."""
        target = path.resolve()
        for resolution in self.resolutions().values():
            for copy in resolution.copies:
                if copy.level != "project" and copy.extension is not None and copy.extension.script == target:
                    return copy
        return None

    def inside_copy(self, path: Path) -> str | None:
        """The registry whose copy holds ``path``, if any (a file its manifest does not list)."""
        for name in self.state.pins:
            if path.resolve().is_relative_to(self.store.checkout(name).resolve()):
                return name
        return None

    def verdict(self, copy: Copy, added: bool = False) -> Verdict:
        """Whether ``copy`` (with a manifest entry) may run, and if not why (``check.py``); ``added``: an
        explicit table of the user's config points at it."""
        assert copy.extension is not None
        return self.checker.verdict(copy.extension, copy.level, copy.registry, added)


def explicit_ids(config: Config) -> list[str]:
    ids = [f"tools/{n}" for n in config.tools.script] + [f"connectors/{n}" for n in config.connectors.script]
    agents = config.agents or {}
    ids += [f"agents/{n}" for n, v in agents.items() if n not in AGENT_RESERVED and isinstance(v, dict)]
    for group in ("inline", "script"):
        ids += [f"agents/{n}" for n in (agents.get(group) or {})]
    return ids


def project_manifest(folder: Path) -> Manifest:
    """The project's ``.ctx/`` extensions: ``.ctx/registry.toml`` entries, plus files found by
    convention (``tools/NAME.lua``, ``tools/NAME/tool.lua``, ``agents/NAME.md`` ...), which get no
    capability beyond the pure ones."""
    manifest = Manifest()
    if not folder.is_dir():
        return manifest
    listed = folder / MANIFEST
    if listed.is_file():
        try:
            manifest = parse_manifest(listed.read_text(encoding="utf-8"), label=str(listed), root=folder)
        except ConfigError as exc:
            manifest.errors.append(exc.message)
    for kind_folder, (inner, suffix) in PROJECT_FILES.items():
        base = folder / kind_folder
        if not base.is_dir():
            continue
        for item in sorted(base.iterdir()):
            name = item.name.removesuffix(suffix) if item.is_file() else item.name
            script = item if item.is_file() and item.name.endswith(suffix) else item / inner
            ext_id = f"{kind_folder}/{name}"
            if ext_id in manifest.extensions or not script.is_file() or name.startswith("."):
                continue
            entry = ExtensionEntry(kind=kind_folder[:-1], path=script.relative_to(folder).as_posix())  # type: ignore[arg-type]
            manifest.extensions[ext_id] = Extension(ext_id, entry, script.resolve())
    return manifest


def grant_for(copy: Copy, values: dict[str, Any], sha256: str = "") -> Grant:
    """The ``Grant`` of ``copy``'s manifest entry; ``{key}`` hosts take the host of config value ``key``;
    ``sha256``: the script's bytes it is bound to (a Lua worker loads nothing else)."""
    assert copy.extension is not None
    entry = copy.extension.entry
    hosts: list[str] = []
    for host in entry.hosts:
        found = CONFIG_HOST.match(host)
        hosts.extend(config_hosts(values.get(found.group(1))) if found else [host])
    return Grant(copy.owner, frozenset(entry.capabilities), tuple(hosts), tuple(entry.env), sha256)


def config_hosts(value: Any) -> list[str]:
    """The host[:port] of a config value: a URL, or a list of URLs and host patterns."""
    out: list[str] = []
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, str) or not item.strip():
            continue
        host = urlsplit(item).netloc.rsplit("@", 1)[-1] if "://" in item else item.strip()
        try:
            parse_rule(host)
        except ConfigError:
            log.warning("config value %r does not name a host; not added to the allowed hosts", item)
            continue
        out.append(host)
    return out


__all__ = ["LEVELS", "Copy", "Registries", "Resolution", "grant_for", "project_folder", "table_key"]
