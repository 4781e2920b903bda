"""Whether one copy of an extension may run, and if not, why: the rule ``apply`` and ``ctx registry
list`` share.

A copy runs when a consent covers it (``consent.py``: same place, same fingerprint), or when it
needs none and is unchanged. It needs one when it is a tool, or a connector of the project's
``.ctx/``, that asks for ``http`` or ``env`` (a registry connector is used only once the user adds it:
that is the consent). A registry copy is unchanged when every file it runs, and its entry of
``registry.toml``, are as in the pinned commit (``git ls-tree`` of the pin against the files'
object ids on disk: an edit in the data folder is seen even though the copy still names its pin).
Agents are Markdown prompts: no code, no capability; they are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from context_harness.errors import ConfigError
from context_harness.registries.consent import GRANTING, Fingerprint, explain, files_run, fingerprint, source_of
from context_harness.registries.manifest import MANIFEST, Extension, Manifest
from context_harness.registries.manifest import parse as parse_manifest
from context_harness.registries.store import Pin, State, Store, blob_id

NEEDS_ENABLE = ("http", "env")


@dataclass
class Verdict:
    """Whether a copy runs; ``reason`` (when off) says why and what to run, ``new_asks`` what it asks for
    that the enabled copy did not."""

    on: bool
    fingerprint: Fingerprint
    reason: str = ""
    new_asks: list[str] = field(default_factory=list)
    consented: bool = False  # a consent covers it (its script is then held to its hash)
    pinned: bool = False  # a registry copy as its pinned commit has it (held to its hash too)


def needs_consent(ext: Extension, level: str, added: bool = False) -> bool:
    """A tool, or a project connector, asking for ``http`` or ``env``; one the user added to the config
    (``ctx registry add``: an explicit table on a registry's copy) has had its say."""
    if added or ext.kind == "agent" or (ext.kind == "connector" and level != "project"):
        return False
    return any(c in ext.entry.capabilities for c in NEEDS_ENABLE)


@dataclass
class Checker:
    """Verdicts for the copies of one ``Registries`` (caches the pinned trees it reads)."""

    store: Store
    state: State
    project_root: Path
    manifests: dict[str, Manifest]
    _trees: dict[str, dict[str, tuple[str, str]] | str] = field(default_factory=dict)
    _pinned_entries: dict[str, Manifest | None] = field(default_factory=dict)

    def root(self, level: str, registry: str | None) -> Path:
        if level == "project" or registry is None:
            return self.project_root
        pin = self.state.pins[registry]
        return self.store.root(registry, pin)

    def verdict(self, ext: Extension, level: str, registry: str | None, added: bool = False) -> Verdict:
        source = source_of(level, registry)
        print_ = fingerprint(ext, self.root(level, registry))
        consent = self.state.consents.get(ext.id)
        if consent is not None and consent.covers(source, print_):
            return Verdict(True, print_, consented=True)
        edited = self.pin_problem(ext, registry) if level != "project" and registry is not None else None
        if edited is None and not needs_consent(ext, level, added):
            return Verdict(True, print_, pinned=level != "project")
        why, new = explain(ext.id, consent, source, ext, print_)
        enable = f"`ctx registry enable {ext.id}`"
        if edited is not None:
            asks = f"; it asks for new: {', '.join(new)}" if new else ""
            why = f"{edited}{asks}; {enable} runs it as it is now"
        elif not why:
            why = f"asks for {', '.join(ext.entry.capabilities)}; {enable}"
        return Verdict(False, print_, why, new)

    # -- the pin ----------------------------------------------------------------------------

    def pin_problem(self, ext: Extension, name: str) -> str | None:
        """How the copy of ``ext`` in registry ``name`` differs from its pinned commit; None: it does not."""
        pin = self.state.pins[name]
        tree = self._tree(name, pin)
        if isinstance(tree, str):
            return f"cannot be checked against the pin of registry {name} ({tree})"
        checkout = self.store.checkout(name).resolve()
        changed: list[str] = []
        wanted = {p.resolve() for p in files_run(ext)} | {ext.script.resolve()}
        length = len(next(iter(tree.values()))[1]) if tree else 40
        for path in sorted(wanted):
            if not path.is_relative_to(checkout):
                changed.append(str(path))
                continue
            rel = path.relative_to(checkout).as_posix()
            known = tree.get(rel)
            if known is None or blob_id(path, length) != known[1]:
                changed.append(self._shown(rel, pin))
        if "fs" in ext.entry.capabilities:  # a file of its folder deleted from the copy
            folder = ext.script.parent.resolve().relative_to(checkout).as_posix()
            prefix = "" if folder == "." else folder + "/"
            changed += [self._shown(p, pin) for p in sorted(tree) if p.startswith(prefix)
                        and not (checkout / p).exists() and not any(part == ".git" for part in p.split("/"))]
        entry = self._entry_problem(ext, name, pin, tree)
        if entry is not None:
            changed.insert(0, entry)
        if not changed:
            return None
        return (f"edited in the copy since registry {name} was pinned at {pin.commit[:7]}: {', '.join(changed)} "
                f"(delete {self.store.checkout(name)} to restore it: the next `ctx registry` command clones it "
                "again at its pin)")

    def _tree(self, name: str, pin: Pin) -> dict[str, tuple[str, str]] | str:
        if name not in self._trees:
            try:
                self._trees[name] = self.store.tree(name, pin.commit)
            except ConfigError as exc:
                self._trees[name] = exc.message
        return self._trees[name]

    @staticmethod
    def _shown(rel: str, pin: Pin) -> str:
        return rel.removeprefix(pin.root + "/") if pin.root else rel

    def _entry_problem(self, ext: Extension, name: str, pin: Pin, tree: dict[str, tuple[str, str]]) -> str | None:
        """The manifest entry of ``ext`` differs from the pinned commit's (registry.toml edited in the copy)."""
        rel = f"{pin.root}/{MANIFEST}" if pin.root else MANIFEST
        known = tree.get(rel)
        if known is not None and blob_id(self.store.checkout(name) / rel, len(known[1])) == known[1]:
            return None
        if name not in self._pinned_entries:
            text = self.store.show(name, pin.commit, rel)
            pinned = None
            if text is not None:
                try:
                    pinned = parse_manifest(text, label=f"registry {name} at {pin.commit[:7]}",
                                            root=self.store.root(name, pin), check_files=False)
                except ConfigError:
                    pinned = None
            self._pinned_entries[name] = pinned
        pinned_manifest = self._pinned_entries[name]
        before = pinned_manifest.extensions.get(ext.id) if pinned_manifest is not None else None
        if before is None:
            return f"{MANIFEST} (its entry is not in the pinned commit)"
        if any(getattr(before.entry, k) != getattr(ext.entry, k) for k in GRANTING):
            return f"{MANIFEST} (its entry)"
        return None


__all__ = ["NEEDS_ENABLE", "Checker", "Verdict", "needs_consent"]
