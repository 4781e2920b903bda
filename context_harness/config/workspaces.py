"""The workspace registry: named workspace configs one server serves together (issue 52).

A TOML file, by default ``$XDG_CONFIG_HOME/context-harness/workspaces.toml`` (beside the user's
``config.toml``), kept by ``ctx workspace add/list/remove``::

    [workspaces.notes]
    config = "/home/me/notes/.ctx/config.toml"

Each entry names an existing workspace config, unchanged; a relative path is read from the
registry file's folder. ``check`` loads every entry and says which are bad (the config file is
missing, two names share one config, the config does not load); ``context-harness --workspaces``
serves the good ones and lists the bad ones as set aside.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from context_harness.errors import BadRequest, ConfigError, NotFound

if TYPE_CHECKING:
    from context_harness.config import Config

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
"""A workspace name: lowercase letters, digits, ``_`` and ``-`` (it appears in tool names and ids)."""


def default_file() -> Path:
    """``$XDG_CONFIG_HOME/context-harness/workspaces.toml`` (``~/.config/...`` without the variable)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "context-harness" / "workspaces.toml"


@dataclass(frozen=True)
class Entry:
    """One registered workspace: its name and the config file it names (absolute)."""

    name: str
    config: Path


@dataclass
class Checked:
    """A registry read and checked: the entries that load (with their configs) and those set aside."""

    file: Path
    good: list[tuple[Entry, Config]] = field(default_factory=list)  # (entry, its loaded Config)
    bad: list[tuple[Entry, str]] = field(default_factory=list)  # (entry, why it is set aside)


def check_name(name: str) -> str:
    """``name`` when it is a valid workspace name, else ``BadRequest`` saying what one is."""
    if not NAME.match(name):
        raise BadRequest(f"workspace name {name!r}: use 1-32 lowercase letters, digits, '_' or '-', "
                         "starting with a letter or digit")
    return name


def read(file: Path) -> list[Entry]:
    """The entries of registry ``file`` in file order; none when it does not exist.
    ``ConfigError`` for a file that is not TOML or has an entry without ``config``."""
    if not file.is_file():
        return []
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: not a workspace registry: {exc}") from None
    table = raw.get("workspaces", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: [workspaces] must be a table of [workspaces.NAME] entries")
    entries = []
    for name, value in table.items():
        path = value.get("config") if isinstance(value, dict) else None
        if not isinstance(path, str) or not path:
            raise ConfigError(f"{file}: [workspaces.{name}] needs config = \"PATH\" (a workspace config file)")
        config = Path(path).expanduser()
        entries.append(Entry(name, config if config.is_absolute() else (file.parent / config).resolve()))
    return entries


def write(file: Path, entries: list[Entry]) -> None:
    """Write ``entries`` to ``file`` (made with its folder when missing), replacing it atomically."""
    import tomlkit

    document = tomlkit.document()
    document.add(tomlkit.comment("context-harness workspaces: `ctx workspace add NAME CONFIG`, "
                                 "served by `context-harness --workspaces`"))
    table = tomlkit.table(is_super_table=True)
    for entry in entries:
        item = tomlkit.table()
        item.add("config", str(entry.config))
        table.add(entry.name, item)
    document.add("workspaces", table)
    for key, value in _kept(file).items():  # the registry's own [server] (OAuth with --workspaces) stays
        document.add(key, value)
    file.parent.mkdir(parents=True, exist_ok=True)
    temporary = file.with_name(file.name + ".tmp")
    temporary.write_text(tomlkit.dumps(document), encoding="utf-8")
    os.replace(temporary, file)


def _kept(file: Path) -> dict[str, object]:
    """The tables of ``file`` other than ``[workspaces]``, as written."""
    import tomlkit

    try:
        return {k: v for k, v in tomlkit.parse(file.read_text(encoding="utf-8")).items() if k != "workspaces"}
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.ParseError):
        return {}


def server_table(file: Path) -> dict[str, object]:
    """The registry's own ``[server]`` table (``public_url``, ``auth_token``, ``[server.oauth]``: OAuth
    for every workspace it serves over HTTP), or empty."""
    if not file.is_file():
        return {}
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: not a workspace registry: {exc}") from None
    table = raw.get("server", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: [server] must be a table")
    return table


def add(file: Path, name: str, config: Path) -> Entry:
    """Register ``config`` as workspace ``name``: ``BadRequest`` for a bad or taken name, or a config
    another name already registers; ``ConfigError`` when the config does not exist."""
    check_name(name)
    config = config.expanduser().resolve()
    if not config.is_file():
        raise ConfigError(f"config file {config} does not exist (a workspace config: `ctx init` makes one)")
    entries = read(file)
    for entry in entries:
        if entry.name == name:
            raise BadRequest(f"workspace {name!r} is already registered ({entry.config}); "
                             f"`ctx workspace remove {name}` first")
        if _same(entry.config, config):
            raise BadRequest(f"{config} is already registered as workspace {entry.name!r}")
    added = Entry(name, config)
    write(file, [*entries, added])
    return added


def remove(file: Path, name: str) -> Entry:
    """Remove workspace ``name`` from ``file``; ``NotFound`` naming the registered ones."""
    entries = read(file)
    found = next((entry for entry in entries if entry.name == name), None)
    if found is None:
        known = ", ".join(entry.name for entry in entries) or "none"
        raise NotFound(f"no workspace named {name!r} in {file} (registered: {known})")
    write(file, [entry for entry in entries if entry.name != name])
    return found


def check(file: Path) -> Checked:
    """Read ``file`` and load each entry's config: the good ones, and the bad ones with why (a bad
    name, a missing file, a config another name registers first, a config that does not load)."""
    from context_harness import config as config_mod

    checked = Checked(file)
    seen: dict[str, str] = {}
    for entry in read(file):
        problem = None
        if not NAME.match(entry.name):
            problem = check_name_message(entry.name)
        elif not entry.config.is_file():
            problem = f"config file {entry.config} does not exist"
        elif _key(entry.config) in seen:
            problem = f"{entry.config} is already served as workspace {seen[_key(entry.config)]!r} (two names for " \
                      "one config)"
        if problem is None:
            seen[_key(entry.config)] = entry.name
            try:
                checked.good.append((entry, config_mod.load_file(entry.config)))
                continue
            except ConfigError as exc:
                problem = exc.message
        checked.bad.append((entry, problem))
    return checked


def check_name_message(name: str) -> str:
    try:
        check_name(name)
    except BadRequest as exc:
        return exc.message
    return ""


def _key(path: Path) -> str:
    return os.path.realpath(path)


def _same(a: Path, b: Path) -> bool:
    return _key(a) == _key(b)


__all__ = ["NAME", "Checked", "Entry", "add", "check", "check_name", "default_file", "read", "remove", "server_table",
           "write"]
