"""The workspace's copies of its registries, and the pin: the commit each one is at.

Each registry is cloned with the system ``git`` into ``<data dir>/registries/NAME`` and checked out,
detached, at its pinned commit; nothing else moves it. The state (pins, and the consents of
``ctx registry enable``, each bound to the enabled copy's code: ``consent.py``) is
``<data dir>/registries.json``, written atomically; ``tree`` and ``blob_id`` let a copy be checked
against its pinned commit. A ``url`` that is a local folder
inside a git repository (the starter ``registry/`` of a checkout) clones that repository and reads
the registry from its folder. Works offline against local repositories.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from context_harness.config import Config, RegistryConfig
from context_harness.connectors.git import check_url, run_git
from context_harness.errors import ConfigError
from context_harness.registries.consent import Consent

GIT_TIMEOUT = 300  # seconds for one git call on a registry (clone, fetch, checkout ...); then it is killed
STATE_FILE = "registries.json"
OBJECT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


class RegistryError(ConfigError):
    """git failed on a registry; the message says what to fix."""


@dataclass
class Pin:
    commit: str
    root: str = ""  # the registry's folder inside the repository ("" for its root)
    url: str = ""


@dataclass
class State:
    pins: dict[str, Pin] = field(default_factory=dict)
    consents: dict[str, Consent] = field(default_factory=dict)  # extension id -> the copy enabled


def git(args: list[str], cwd: Path | None = None) -> str:
    return run_git(args, cwd, RegistryError, GIT_TIMEOUT)


def object_id(value: str, what: str) -> str:
    """``value`` when it is a full commit hash (so git never reads it as an option), else ``ConfigError``."""
    if not OBJECT_ID.match(value):
        raise ConfigError(f"{what}: {value[:80]!r} is not a commit hash; run `ctx registry update --accept` to pin "
                          "it again")
    return value


class Store:
    """The registries of one workspace (``config.data_dir``)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.base = config.data_dir / "registries"
        self.state_path = config.data_dir / STATE_FILE

    # -- state ------------------------------------------------------------------------------

    def state(self) -> State:
        try:
            raw: dict[str, Any] = json.loads(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return State()
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{self.state_path}: cannot read the registry pins ({exc.__class__.__name__}); "
                              "delete it and run `ctx registry update --accept`") from None
        try:
            pins = {name: Pin(**pin) for name, pin in (raw.get("pins") or {}).items()}
        except TypeError:
            raise ConfigError(f"{self.state_path}: the registry pins are not in the expected form; delete it and "
                              "run `ctx registry update --accept`") from None
        consents: dict[str, Consent] = {}
        for ext_id in raw.get("enabled") or []:  # bare ids, before consent was bound to the code
            if isinstance(ext_id, str):
                consents[ext_id] = Consent.legacy()
        for ext_id, item in (raw.get("consents") or {}).items():
            consent = Consent.load(item)
            if consent is not None:
                consents[ext_id] = consent
        return State(pins, consents)

    def save(self, state: State) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {"pins": {n: asdict(p) for n, p in state.pins.items()}}
        data["consents"] = {i: c.dump() for i, c in sorted(state.consents.items()) if c.bound}
        legacy = sorted(i for i, c in state.consents.items() if not c.bound)
        if legacy:  # kept (they enable nothing) so that `ctx registry list` can say to enable them again
            data["enabled"] = legacy
        fd, tmp = tempfile.mkstemp(prefix=".registries-", dir=self.state_path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=2)
            os.replace(tmp, self.state_path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # -- copies -----------------------------------------------------------------------------

    def checkout(self, name: str) -> Path:
        return self.base / name

    def root(self, name: str, pin: Pin) -> Path:
        """The folder holding the registry's ``registry.toml`` in its copy."""
        return self.checkout(name) / pin.root if pin.root else self.checkout(name)

    def source(self, name: str, registry: RegistryConfig) -> tuple[str, str]:
        """``(what to clone, the registry's folder inside it)`` for a configured registry; ``ConfigError``
        for a url git must not be given (``connectors.git.url_problem``)."""
        url = check_url(registry.url, f"[registries.{name}]", ConfigError)
        local = Path(url).expanduser()
        if "://" in url or (":" in url and not local.is_absolute() and not url.startswith(".")):
            return url, ""
        folder = local if local.is_absolute() else (self.config.base_dir / local)
        folder = folder.resolve()
        if not folder.is_dir():
            raise ConfigError(f"registry url {url!r}: no such folder ({folder})")
        try:
            top = Path(git(["rev-parse", "--show-toplevel"], cwd=folder)).resolve()
        except RegistryError:
            raise ConfigError(f"registry url {url!r}: {folder} is not in a git repository; run `git init` "
                              "and commit it there (registries are pinned to commits)") from None
        sub = folder.relative_to(top).as_posix()
        return str(top), "" if sub == "." else sub

    def clone(self, name: str, registry: RegistryConfig) -> Pin:
        """Clone registry ``name`` (if not cloned yet) and pin it at the source's current commit."""
        url, sub = self.source(name, registry)
        dest = self.checkout(name)
        if not (dest / ".git").exists():
            if dest.exists():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            git(["clone", "--quiet", "--", url, str(dest)])
        git(["checkout", "--quiet", "--detach"], cwd=dest)
        return Pin(object_id(git(["rev-parse", "HEAD"], cwd=dest), f"registry {name}"), sub, registry.url)

    def fetch(self, name: str) -> str:
        """Fetch the source's current commit into the copy (checking nothing out); its hash."""
        dest = self.checkout(name)
        git(["fetch", "--quiet", "--", "origin", "HEAD"], cwd=dest)
        return object_id(git(["rev-parse", "FETCH_HEAD"], cwd=dest), f"registry {name}")

    def changed_files(self, name: str, old: str, new: str, root: str) -> list[str]:
        args = ["diff", "--name-only", "--end-of-options", object_id(old, name), object_id(new, name), "--"]
        args += [root] if root else []
        out = git(args, cwd=self.checkout(name))
        return [line.removeprefix(root + "/") if root else line for line in out.splitlines() if line]

    def show(self, name: str, commit: str, path: str) -> str | None:
        try:
            return git(["show", "--end-of-options", f"{object_id(commit, name)}:{path}"], cwd=self.checkout(name))
        except RegistryError:
            return None

    def tree(self, name: str, commit: str) -> dict[str, tuple[str, str]]:
        """Every file of the copy's pinned ``commit``: repository path -> (mode, object id)."""
        out = git(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", object_id(commit, f"registry {name}")],
                  cwd=self.checkout(name))
        found: dict[str, tuple[str, str]] = {}
        for record in out.split("\0"):
            meta, _, path = record.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob":
                found[path] = (parts[0], parts[2])
        return found

    def dirty(self, name: str) -> bool:
        return bool(git(["status", "--porcelain"], cwd=self.checkout(name)))

    def move(self, name: str, commit: str) -> None:
        git(["checkout", "--quiet", "--force", "--detach", object_id(commit, f"registry {name}")],
            cwd=self.checkout(name))

    def delete(self, name: str) -> None:
        shutil.rmtree(self.checkout(name), ignore_errors=True)


def blob_id(path: Path, length: int) -> str | None:
    """git's object id of the file at ``path`` as it is on disk (SHA-1, or SHA-256 when ``length`` is 64);
    None when there is no such file."""
    try:
        info = path.lstat()
        data = os.readlink(path).encode("utf-8", "surrogateescape") if stat.S_ISLNK(info.st_mode) else path.read_bytes()
    except OSError:
        return None
    digest = hashlib.sha256() if length == 64 else hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


__all__ = ["GIT_TIMEOUT", "Pin", "RegistryError", "State", "Store", "blob_id", "git", "object_id"]
