"""The write-back race battery (``benchmarks/race_battery.py``): while another process swaps the
note folder for a symlink to a canary folder outside the source, and single notes for symlinks to
canary files, write, move, delete and restore either act inside the source or fail with
``bad_request``/``conflict``; the canary tree's hash never changes and no canary reaches the trash.
CI runs a short battery (``CTX_RACE_ATTEMPTS``, default 300 a layer); the closing figures quote a
full run of 10,000 attempts per operation."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
ATTEMPTS = int(os.environ.get("CTX_RACE_ATTEMPTS", "300"))


def _battery() -> Any:
    spec = importlib.util.spec_from_file_location("ctx_race_battery", REPO / "benchmarks" / "race_battery.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assert_held(figures: dict[str, Any], acting: tuple[str, ...]) -> None:
    assert figures["outside_changed"] == [], figures
    assert figures["canary_in_trash"] == [], figures
    assert figures["flips"] > 10, figures
    for operation, outcomes in figures["outcomes"].items():
        assert not any(code.startswith("other") for code in outcomes), (operation, figures)
    for operation in acting:  # the battery did act, not only refuse
        assert figures["outcomes"][operation].get("ok", 0) > 0, (operation, figures)
    refused = sum(n for o in figures["outcomes"].values() for code, n in o.items() if code != "ok")
    assert refused > 0, figures  # and the swaps did reach the operations


@pytest.mark.slow
def test_file_operations_never_act_outside_the_source_under_symlink_swaps() -> None:
    figures = _battery().run(ATTEMPTS, 120.0, "files")
    assert min(figures["attempts"].values()) >= ATTEMPTS, figures
    _assert_held(figures, ("write", "move", "delete", "restore"))


@pytest.mark.slow
def test_the_note_tools_never_act_outside_the_source_under_symlink_swaps() -> None:
    figures = _battery().run(max(ATTEMPTS // 3, 50), 120.0, "harness")
    _assert_held(figures, ("write", "move"))  # a refused write ends a round: later steps run less
