"""registry.toml: every bad entry is named with the file and its id; the good ones still load."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_harness.errors import ConfigError
from context_harness.registries.manifest import load, parse
from context_harness.registries.resolve import config_hosts


def test_good_entries_load_and_each_bad_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "ok.lua").write_text("return {}", encoding="utf-8")
    text = """
[registry]
name = "mine"
description = "mixed"

[extensions."tools/ok"]
kind = "tool"
path = "tools/ok.lua"
capabilities = ["http"]
hosts = ["api.example.com", "{url}"]
config = ["url"]

[extensions."tools/wrong-kind"]
kind = "connector"
path = "tools/ok.lua"

[extensions."tools/bad-cap"]
kind = "tool"
path = "tools/ok.lua"
capabilities = ["os"]

[extensions."tools/hosts-no-http"]
kind = "tool"
path = "tools/ok.lua"
hosts = ["api.example.com"]

[extensions."tools/unknown-key"]
kind = "tool"
path = "tools/ok.lua"
capabilities = ["http"]
hosts = ["{token}"]

[extensions."tools/missing"]
kind = "tool"
path = "tools/nothing.lua"

[extensions."tools/escape"]
kind = "tool"
path = "../outside.lua"

[extensions."tools/env-no-cap"]
kind = "tool"
path = "tools/ok.lua"
env = ["HOME"]

[extensions."widgets/x"]
kind = "tool"
path = "tools/ok.lua"

[extensions."agents/lua"]
kind = "agent"
path = "tools/ok.lua"
"""
    manifest = parse(text, label="mine/registry.toml", root=tmp_path)
    assert manifest.name == "mine"
    assert list(manifest.extensions) == ["tools/ok"]
    assert manifest.extensions["tools/ok"].entry.hosts == ["api.example.com", "{url}"]
    errors = "\n".join(manifest.errors)
    assert len(manifest.errors) == 9, errors
    for ext_id, why in [("tools/wrong-kind", "does not match the id"), ("tools/bad-cap", "unknown capability 'os'"),
                        ("tools/hosts-no-http", 'does not include "http"'), ("tools/unknown-key", "'token'"),
                        ("tools/missing", "no such file"), ("tools/escape", "without '..'"),
                        ("tools/env-no-cap", '"env"'), ("widgets/x", "<kind>s/<name>"),
                        ("agents/lua", "agents are Markdown files (.md)")]:
        line = next(e for e in manifest.errors if f'[extensions."{ext_id}"]' in e)
        assert line.startswith("mine/registry.toml: ") and why in line, line


def test_a_broken_manifest_names_its_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="reg/registry.toml: invalid TOML"):
        parse("[registry\n", label="reg/registry.toml", root=tmp_path)
    with pytest.raises(ConfigError, match="unknown table"):
        parse("[tools]\n", label="reg/registry.toml", root=tmp_path)
    with pytest.raises(ConfigError, match="no registry.toml"):
        load(tmp_path, "registry empty")


def test_config_hosts_take_the_host_and_port_of_urls_and_host_patterns_from_lists() -> None:
    assert config_hosts("https://user:pw@jira.example.com:8443/rest") == ["jira.example.com:8443"]
    assert config_hosts(["https://a.example.com/x", "*.docs.example.org", "not a host!"]) == [
        "a.example.com", "*.docs.example.org"]
    assert config_hosts("http://[::1]:8080/") == ["[::1]:8080"]
    assert config_hosts(None) == [] and config_hosts(42) == []
