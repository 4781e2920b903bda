"""A config file nested a few hundred levels deep (a cloned project's ``.ctx/config.toml`` is read
unasked) is a config error naming the file, not a ``RecursionError`` traceback from ``tomllib``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from context_harness.config import load_file
from context_harness.errors import ConfigError


def test_a_deeply_nested_config_is_a_config_error(tmp_path: Path, child_env: dict[str, str]) -> None:
    config = tmp_path / "ctx.toml"
    config.write_text("x = " + "[" * 600 + "]" * 600 + '\n[db]\npath = "d.sqlite"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_file(config)
    assert caught.value.message == f"{config}: invalid TOML: arrays or inline tables nested too deeply"
    done = subprocess.run([sys.executable, "-m", "context_harness", "sources", "--config", str(config)], cwd=tmp_path,
                          env=child_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "nested too deeply" in done.stderr
