"""Consent bound to the code: what ``ctx registry enable`` records, and whether a copy still matches it.

A copy's ``Fingerprint`` is the SHA-256 of what decides what it does: the part of its manifest entry
that grants (kind, path, config, capabilities, hosts, env) and every file it runs — its script, and
with ``fs`` every file of the script's folder (it may read them, and ``load`` Lua text it reads).
``Consent`` records, for one extension id, where the enabled copy came from (a registry and its
commit, or the project's ``.ctx/``), its fingerprint, its files' hashes and what it asked for. A copy
is covered by a consent only when it comes from the same place and has the same fingerprint; any
other copy (another registry, a project ``.ctx/`` copy, an edited file) is not, and ``explain`` says
why, naming what it asks for that the enabled copy did not.

A bare id in ``registries.json`` (written before consent was bound to the code) is a ``Consent``
with ``bound = False``: it covers nothing, and says to run ``ctx registry enable ID`` again.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from context_harness.registries.manifest import Extension

GRANTING = ("kind", "path", "config", "capabilities", "hosts", "env")  # the entry keys a fingerprint covers
PROJECT = "project .ctx/"


@dataclass(frozen=True)
class Fingerprint:
    digest: str  # SHA-256 over the granting entry keys and files
    files: dict[str, str]  # path relative to the registry (or .ctx/) root -> SHA-256 of its bytes
    script_sha256: str  # the script's own bytes (checked again when a Lua worker loads it)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def files_run(ext: Extension) -> list[Path]:
    """The files ``ext`` runs: its script; with ``fs``, every file of the script's folder (no ``.git``)."""
    if "fs" not in ext.entry.capabilities:
        return [ext.script]
    found: list[Path] = []
    for folder, dirs, names in os.walk(ext.script.parent, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        found.extend(Path(folder) / n for n in sorted(names))
    return found


def fingerprint(ext: Extension, root: Path) -> Fingerprint:
    """The fingerprint of ``ext`` as it is on disk under ``root`` (its registry's or the project's folder)."""
    files: dict[str, str] = {}
    base = root.resolve()
    for path in files_run(ext):
        resolved = path.resolve()
        rel = resolved.relative_to(base).as_posix() if resolved.is_relative_to(base) else str(resolved)
        try:
            files[rel] = _sha256(resolved) if resolved.is_file() else "missing"
        except OSError:
            files[rel] = "unreadable"
    entry = {key: getattr(ext.entry, key) for key in GRANTING}
    text = json.dumps({"id": ext.id, "entry": entry, "files": files}, sort_keys=True)
    script = files.get(ext.script.resolve().relative_to(base).as_posix()
                       if ext.script.resolve().is_relative_to(base) else str(ext.script.resolve()), "missing")
    return Fingerprint(hashlib.sha256(text.encode()).hexdigest(), files, script)


@dataclass
class Consent:
    """``ctx registry enable ID``: the copy the user said yes to."""

    source: str  # "registry NAME" or "project .ctx/"
    digest: str = ""
    commit: str | None = None
    asks: list[str] = field(default_factory=list)  # Extension.asks of the enabled copy
    files: dict[str, str] = field(default_factory=dict)
    bound: bool = True  # False: a bare id from an older registries.json

    @classmethod
    def legacy(cls) -> Consent:
        return cls(source="", bound=False)

    @classmethod
    def of(cls, source: str, commit: str | None, ext: Extension, print_: Fingerprint) -> Consent:
        return cls(source, print_.digest, commit, sorted(ext.asks), dict(print_.files))

    @classmethod
    def load(cls, raw: Any) -> Consent | None:
        """One entry of ``registries.json``; None when it is not one (ignored, so never enabled)."""
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("source", "digest")):
            return None
        asks, files, commit = raw.get("asks") or [], raw.get("files") or {}, raw.get("commit")
        if not isinstance(asks, list) or not isinstance(files, dict) or not isinstance(commit, (str, type(None))):
            return None
        return cls(raw["source"], raw["digest"], commit, [str(a) for a in asks],
                   {str(k): str(v) for k, v in files.items()})

    def dump(self) -> dict[str, Any]:
        data = asdict(self)
        del data["bound"]
        return data

    def covers(self, source: str, print_: Fingerprint) -> bool:
        return self.bound and self.source == source and self.digest == print_.digest


def source_of(level: str, registry: str | None) -> str:
    return PROJECT if level == "project" else f"registry {registry}"


def explain(ext_id: str, consent: Consent | None, source: str, ext: Extension,
            print_: Fingerprint) -> tuple[str, list[str]]:
    """Why ``consent`` does not cover this copy, and what the copy asks for that the enabled one did not."""
    again = f"`ctx registry enable {ext_id}`"
    if consent is None:
        return "", []
    if not consent.bound:
        return (f"enabled by an older version, before consent was bound to the code; run {again} again", [])
    new = sorted(ext.asks - set(consent.asks))
    if consent.source != source:
        what = f"provided by {source}, not by the {consent.source} that you enabled"
    else:
        changed = sorted(p for p in set(print_.files) | set(consent.files)
                         if print_.files.get(p) != consent.files.get(p))
        what = "changed since you enabled it" + (f": {', '.join(changed)}" if changed else " (its manifest entry)")
    asks = f"; it asks for new: {', '.join(new)}" if new else ""
    return f"{what}{asks}; {again} runs this copy", new


__all__ = ["PROJECT", "Consent", "Fingerprint", "explain", "files_run", "fingerprint", "source_of"]
