"""The real assistant clients the tests run, installed from npm by ``tests/CLIENT/install.sh`` (pinned)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.paths import REPO


def installed(client: str) -> Path:
    """``tests/CLIENT/install.sh``'s ``node_modules/.bin``; skips when npm or its registry is unreachable."""
    if shutil.which("npm") is None:
        pytest.skip(f"npm is not installed: cannot install the {client} CLI (needs npm + network)")
    done = subprocess.run(["sh", str(REPO / "tests" / client / "install.sh")], capture_output=True, text=True,
                          timeout=900)
    if done.returncode != 0:
        ping = subprocess.run(["npm", "ping"], capture_output=True, text=True, timeout=60)
        if ping.returncode != 0:
            pytest.skip(f"the {client} CLI is not installed and the npm registry is unreachable "
                        f"({ping.stderr.strip()[-300:]})")
        raise AssertionError(f"tests/{client}/install.sh failed:\n{done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1]) / "node_modules" / ".bin"


def offline(command: list[str]) -> list[str]:
    """``command`` in a network namespace of its own (no network at all) where this machine allows it."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True, timeout=30).returncode == 0:
        return [unshare, "-rn", *command]
    return command
