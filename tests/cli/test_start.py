"""`ctx` starts in a blink: the command modules import the config, the models and the core only in
the command that needs them, so `ctx --version` and `ctx --help` load none of it (0.43 s of CPU
before, 0.07 s after: benchmarks/cli_start.py)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pydantic", "context_harness.config", "context_harness.models", "context_harness.core", "anyio", "rich",
         "tantivy", "numpy")


def loaded_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m.startswith({HEAVY!r}))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_command_line_loads_nothing_heavy_to_start() -> None:
    assert loaded_after("import context_harness.cli") == []


def test_version_and_help_load_nothing_heavy() -> None:
    for args in (["--version"], ["--help"], ["sync", "--help"]):
        code = f"from context_harness.cli import main\nsys.argv = ['ctx', *{args!r}]\ntry:\n    main()\nexcept SystemExit:\n    pass"
        assert loaded_after(code) == [], args


def test_the_probe_sees_a_heavy_import() -> None:
    assert "pydantic" in loaded_after("import context_harness.config")
