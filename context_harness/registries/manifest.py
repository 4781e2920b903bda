"""``registry.toml``: what a registry offers and what each extension may use.

One bad entry is reported with the file and the extension id, and the others still load::

    manifest = parse(text, label="community/registry.toml", root=checkout)
    manifest.extensions["tools/web-fetch"].capabilities   # ["http"]
    manifest.errors                                      # ["community/registry.toml: [extensions.\"x\"]: ..."]
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from context_harness.config import describe_validation_error
from context_harness.errors import ConfigError
from context_harness.lua.grant import GATED
from context_harness.lua.netpolicy import parse_rule

MANIFEST = "registry.toml"
MAX_MANIFEST_SIZE = 1024 * 1024  # characters (bytes, on disk); a manifest of 1,000 extensions is ~200 kB
KIND_FOLDERS = {"connector": "connectors", "tool": "tools", "agent": "agents"}
EXTENSION_ID = re.compile(r"^(connectors|tools|agents)/([A-Za-z0-9_.-]{1,64})$")
CONFIG_HOST = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_.-]*)\}$")


class RegistryHeader(BaseModel):
    """``[registry]``: the registry's own name and description."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", pattern=r"^([A-Za-z0-9_.-]{1,64})?$")
    description: str = ""


class ExtensionEntry(BaseModel):
    """``[extensions."<kind>s/<name>"]``: one extension and what it may use."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["connector", "tool", "agent"]
    path: str
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    config: list[str] = Field(default_factory=list)
    capabilities: list[str] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        parts = PurePosixPath(value).parts
        if not value or value.startswith(("/", "\\")) or ".." in parts or ":" in value:
            raise ValueError(f"{value!r} must be a path relative to the registry root, without '..'")
        return value

    @field_validator("capabilities")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [c for c in value if c not in GATED]
        if unknown:
            raise ValueError(f"unknown capability {', '.join(map(repr, unknown))}; use {', '.join(GATED)} "
                             "(json, log, base64, crypto, sleep and print are always available)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ExtensionEntry:
        for host in self.hosts:
            found = CONFIG_HOST.match(host)
            if found and found.group(1) not in self.config:
                raise ValueError(f"hosts: {host!r} names config key {found.group(1)!r}, which `config` does not list")
            if not found:
                try:
                    parse_rule(host)
                except ConfigError:
                    raise ValueError(f"hosts: {host!r} is not a host name, *.domain, IP address, CIDR range "
                                     "(optionally with :port) or \"{config_key}\"") from None
        if self.hosts and "http" not in self.capabilities:
            raise ValueError("hosts are listed but capabilities does not include \"http\"")
        if self.env and "env" not in self.capabilities:
            raise ValueError("env variables are listed but capabilities does not include \"env\"")
        suffix = ".md" if self.kind == "agent" else ".lua"
        if not self.path.lower().endswith(suffix):
            raise ValueError(f"path {self.path!r}: {self.kind}s are {'Markdown' if suffix == '.md' else 'Lua'} "
                             f"files ({suffix})")
        if self.kind == "connector" and "context" in self.capabilities:
            raise ValueError("capability \"context\" is for tools and agents, not connectors")
        return self


@dataclass(frozen=True)
class Extension:
    """One extension of a registry (or of the project's ``.ctx/``), with its script's absolute path."""

    id: str
    entry: ExtensionEntry
    script: Path

    @property
    def kind(self) -> str:
        return self.entry.kind

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]

    @property
    def asks(self) -> set[str]:
        """What it asks for, one string per capability, host and variable (for update diffs)."""
        return ({f"capability {c}" for c in self.entry.capabilities} | {f"host {h}" for h in self.entry.hosts}
                | {f"env {e}" for e in self.entry.env})


@dataclass
class Manifest:
    name: str = ""
    description: str = ""
    extensions: dict[str, Extension] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def parse(text: str, *, label: str, root: Path, check_files: bool = True) -> Manifest:
    """``registry.toml``'s text -> ``Manifest``; a broken file raises ``ConfigError``, a broken entry
    is listed in ``errors`` (naming ``label`` and its id) and left out. ``check_files=False``: a
    manifest of a commit not checked out (its scripts are not on disk)."""
    if len(text) > MAX_MANIFEST_SIZE:
        raise ConfigError(f"{label}: {len(text):,} characters; a manifest may hold at most {MAX_MANIFEST_SIZE:,}")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{label}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per level of arrays and inline tables (~330 levels end it)
        raise ConfigError(f"{label}: invalid TOML: arrays or inline tables nested too deeply") from None
    unknown = set(raw) - {"registry", "extensions"}
    if unknown:
        raise ConfigError(f"{label}: unknown table(s) {', '.join(sorted(unknown))}; a manifest has [registry] "
                          "and [extensions.\"<kind>s/<name>\"]")
    try:
        header = RegistryHeader.model_validate(raw.get("registry", {}))
    except ValidationError as exc:
        raise ConfigError(f"{label}: [registry]: {describe_validation_error(exc, RegistryHeader)}") from None
    manifest = Manifest(header.name, header.description)
    extensions = raw.get("extensions", {})
    if not isinstance(extensions, dict):
        raise ConfigError(f"{label}: extensions must be tables [extensions.\"<kind>s/<name>\"]")
    for ext_id, table in extensions.items():
        try:
            manifest.extensions[ext_id] = _extension(ext_id, table, root, check_files)
        except ValueError as exc:
            manifest.errors.append(f"{label}: [extensions.\"{ext_id}\"]: {exc}")
    return manifest


def _extension(ext_id: str, table: Any, root: Path, check_files: bool) -> Extension:
    found = EXTENSION_ID.match(ext_id)
    if not found:
        raise ValueError("the id must be \"<kind>s/<name>\" (connectors/, tools/ or agents/, then a name of "
                         "letters, digits, _ . -)")
    if not isinstance(table, dict):
        raise ValueError("expected a table")
    try:
        entry = ExtensionEntry.model_validate(table)
    except ValidationError as exc:
        raise ValueError(describe_validation_error(exc, ExtensionEntry)) from None
    if KIND_FOLDERS[entry.kind] != found.group(1):
        raise ValueError(f"kind {entry.kind!r} does not match the id's {found.group(1)}/")
    script = (root / entry.path).resolve()
    if not script.is_relative_to(root.resolve()):
        raise ValueError(f"path {entry.path!r} leads outside the registry")
    if check_files and not script.is_file():
        raise ValueError(f"path {entry.path!r}: no such file in the registry")
    return Extension(ext_id, entry, script)


def load(root: Path, label: str) -> Manifest:
    """The manifest of the registry checked out at ``root`` (``ConfigError`` when it has none)."""
    path = root / MANIFEST
    try:
        size = path.stat().st_size
        if size > MAX_MANIFEST_SIZE:
            raise ConfigError(f"{label}/{MANIFEST}: {size:,} bytes; a manifest may hold at most {MAX_MANIFEST_SIZE:,}")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{label}: no {MANIFEST} at the registry's root") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{label}: cannot read {MANIFEST}: {exc.__class__.__name__}") from None
    return parse(text, label=f"{label}/{MANIFEST}", root=root)


__all__ = ["CONFIG_HOST", "MANIFEST", "Extension", "ExtensionEntry", "Manifest", "load", "parse"]
