"""The official MCP conformance suite against `ctx serve --http` (slow; CI runs it).

Installs @modelcontextprotocol/conformance@0.1.16 and Node 22 with tests/conformance/install.sh;
scenarios that need the suite's own fixture tools/resources/prompts are listed, with reasons, in
tests/conformance/expected-failures.yaml (the suite fails the run if one of them starts passing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from support.paths import REPO

CONFORMANCE = REPO / "tests" / "conformance"


@pytest.fixture(scope="module")
def suite_bin() -> Path:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: cannot install @modelcontextprotocol/conformance (needs npm + network)")
    result = subprocess.run(["sh", str(CONFORMANCE / "install.sh")], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return Path(result.stdout.strip().splitlines()[-1]) / "node_modules" / ".bin"


@pytest.mark.slow
def test_conformance_suite(suite_bin: Path, http_process: str) -> None:
    env = {**os.environ, "PATH": f"{suite_bin}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    result = subprocess.run(
        ["conformance", "server", "--url", f"{http_process}/mcp",
         "--expected-failures", str(CONFORMANCE / "expected-failures.yaml")],
        env=env, capture_output=True, text=True, timeout=900)
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    for scenario in ("server-initialize", "tools-list", "resources-list", "prompts-list", "ping",
                     "dns-rebinding-protection"):
        assert f"✓ {scenario}:" in result.stdout, report
