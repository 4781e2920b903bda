"""``registry.toml`` (from a registry's clone, or a project's ``.ctx/``) bounded: ``tomllib`` recursed
once per nested array or inline table, and a few hundred levels raised ``RecursionError`` out of
every command that reads the manifest; a manifest past 1 MiB is not read."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from context_harness.errors import ConfigError
from context_harness.registries import manifest


@pytest.mark.parametrize("nested", ["[" * 100_000, "[" * 500 + "]" * 500, "{a = " * 400 + "1" + "}" * 400])
def test_a_deeply_nested_manifest_is_a_config_error(tmp_path: Path, nested: str) -> None:
    began = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        manifest.parse(f'[registry]\nname = "x"\nbomb = {nested}\n', label="r/registry.toml", root=tmp_path)
    assert time.perf_counter() - began < 1.0
    assert caught.value.message == "r/registry.toml: invalid TOML: arrays or inline tables nested too deeply"


def test_a_manifest_past_a_mebibyte_is_not_read(tmp_path: Path) -> None:
    (tmp_path / manifest.MANIFEST).write_text("# " + "x" * manifest.MAX_MANIFEST_SIZE + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        manifest.load(tmp_path, "registry r")
    assert caught.value.message == (f"registry r/registry.toml: {manifest.MAX_MANIFEST_SIZE + 3:,} bytes; a manifest "
                                    f"may hold at most {manifest.MAX_MANIFEST_SIZE:,}")
