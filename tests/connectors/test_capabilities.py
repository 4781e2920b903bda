"""Connector capabilities (``connectors/base.py``): the built-in connectors offer the ones the sync,
the live index and ``sources`` look for. A renamed method would otherwise fail quietly: a watched
change would rescan the whole source, an interval sync would never run, a broken source would look
healthy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from context_harness import config as config_mod
from context_harness.connectors.base import (
    Candidate,
    HealthReporting,
    PathScanning,
    ScanReport,
    SetAside,
    runnable,
    settings_of,
    sync_seconds,
)
from context_harness.extensions import collect_extensions


class CodeConnector:
    """A connector made in code: none of the optional capabilities."""

    type = "code"
    name = "one"
    label = "code:one"

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        return iter(())


def test_the_built_in_connectors_offer_their_capabilities(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("CTX_TEST_UNSET_ROOT", raising=False)
    config = config_mod.from_dict({"connectors": {
        "filesystem": {"notes": {"root": str(tmp_path), "sync_interval": "5m"},
                       "gone": {"root": "${CTX_TEST_UNSET_ROOT}"}},
        "git": {"up": {"url": "https://example.invalid/x.git"}}}}, None)
    extensions = collect_extensions(connectors=[CodeConnector()], discover=False)
    by_label = {c.label: c for c in extensions.connector_kinds().build(config)}
    notes, gone, git, code = (by_label[k] for k in ("filesystem:notes", "filesystem:gone", "git:up", "code:one"))

    assert isinstance(notes, PathScanning) and not isinstance(git, PathScanning)
    assert (sync_seconds(notes), sync_seconds(git), sync_seconds(gone), sync_seconds(code)) == (300.0, 600.0, None, None)
    assert settings_of(notes) is config.connectors.filesystem["notes"] and settings_of(code) is None
    assert [runnable(c) for c in (notes, gone, git, code)] == [True, False, True, True]
    assert isinstance(gone, SetAside) and not isinstance(notes, SetAside)
    assert all(isinstance(c, HealthReporting) for c in (notes, gone, git)) and not isinstance(code, HealthReporting)
    assert gone.health()[0] is False and "CTX_TEST_UNSET_ROOT" in (gone.health()[1] or "")
