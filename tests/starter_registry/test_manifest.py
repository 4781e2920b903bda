"""registry/registry.toml: every entry names a file of its kind that loads with the project's own
loaders (Lua connectors and tools in the sandbox, agents with the Markdown agent loader), every
extension file has an entry, and each entry declares exactly the capabilities, env vars and config
keys its script uses."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from starter_registry.fakes import REGISTRY

from context_harness.agents.library import build_agent_library
from context_harness.agents.sources import markdown_spec
from context_harness.config import LuaConfig, ScriptConfig
from context_harness.connectors.base import Connector
from context_harness.lua.connector import LuaConnector
from context_harness.lua.tools import LuaTool

MANIFEST = tomllib.loads((REGISTRY / "registry.toml").read_text(encoding="utf-8"))
ENTRIES = MANIFEST["extensions"]
KEYS = {"kind", "path", "description", "tags", "config", "capabilities", "hosts", "env"}
GATED = {  # a host table a script may use only when its entry declares it
    "http": re.compile(r"(?<![\w.])http\.(get|post|put|patch|delete)\("),
    "env": re.compile(r"(?<![\w.])env\.get\("),
    "fs": re.compile(r"(?<![\w.])fs\.(read|list)\("),
    "context": re.compile(r"(?<![\w.])context\.(search|get|sources)\("),
}


def test_the_registry_table_and_every_entry_are_well_formed() -> None:
    assert MANIFEST["registry"]["name"] == "community" and MANIFEST["registry"]["description"]
    assert len(ENTRIES) == 8
    for ext_id, entry in ENTRIES.items():
        assert set(entry) == KEYS, ext_id
        kind = entry["kind"]
        assert kind in ("connector", "tool", "agent")
        assert ext_id.startswith(f"{kind}s/") and entry["path"].startswith(f"{kind}s/"), ext_id
        assert (REGISTRY / entry["path"]).is_file(), ext_id
        assert entry["description"].strip() and entry["tags"]
        assert set(entry["capabilities"]) <= {"http", "env", "fs", "context"}
        for host in entry["hosts"]:
            ref = re.fullmatch(r"\{(\w+)\}", host)
            assert ref is None or ref[1] in entry["config"], f"{ext_id}: {host} names a key it does not require"


def test_every_extension_file_has_an_entry() -> None:
    listed = {entry["path"] for entry in ENTRIES.values()}
    files = {p.relative_to(REGISTRY).as_posix() for folder in ("connectors", "tools", "agents")
             for p in (REGISTRY / folder).rglob("*") if p.is_file()}
    assert files == listed


@pytest.mark.parametrize("ext_id", [k for k, v in ENTRIES.items() if v["kind"] != "agent"])
def test_scripts_use_exactly_what_they_declare(ext_id: str) -> None:
    entry = ENTRIES[ext_id]
    source = (REGISTRY / entry["path"]).read_text(encoding="utf-8")
    code = "\n".join(line.split("--", 1)[0] for line in source.splitlines())  # comments may mention anything
    used = {name for name, pattern in GATED.items() if pattern.search(code)}
    assert used == set(entry["capabilities"]), ext_id
    assert set(re.findall(r'env\.get\("(\w+)"\)', code)) == set(entry["env"]), ext_id
    for key in entry["config"]:
        assert f"config.{key}" in code, f"{ext_id}: requires `{key}` but never reads it"


@pytest.mark.parametrize("ext_id", [k for k, v in ENTRIES.items() if v["kind"] != "agent"])
def test_scripts_load_as_their_kind(ext_id: str) -> None:
    entry = ENTRIES[ext_id]
    name = ext_id.split("/", 1)[1]
    config = ScriptConfig(path=REGISTRY / entry["path"])
    if entry["kind"] == "connector":
        connector = LuaConnector(name, config, LuaConfig(http_allow=[]))
        assert isinstance(connector, Connector) and connector.label == f"script:{name}"
        assert connector.script.evaluate("return type(connector.scan)") == "function"
    else:
        tool = LuaTool(name, config, LuaConfig(http_allow=[]))
        assert tool.name == name and tool.description.strip()
        assert tool.script.evaluate("return tool.name") == name  # the script's own name matches its id


@pytest.mark.parametrize("ext_id", [k for k, v in ENTRIES.items() if v["kind"] == "agent"])
def test_agents_load_with_the_agent_loader(ext_id: str) -> None:
    entry = ENTRIES[ext_id]
    spec = markdown_spec(Path(REGISTRY / entry["path"]))
    assert spec is not None and spec.name == ext_id.split("/", 1)[1] and spec.source == "markdown"
    assert spec.description.strip() and len(spec.system_prompt) > 500
    assert {"search", "get", "web-fetch"} <= set(spec.tools)
    tool_ids = {k.split("/", 1)[1] for k, v in ENTRIES.items() if v["kind"] == "tool"}
    assert set(spec.tools) - {"search", "get", "sources"} <= tool_ids  # every other tool is in this registry


def test_the_agents_folder_serves_both_agents(workspace) -> None:
    """Pointed at the registry's agents folder, the agent registry lists both and compiles their prompts."""
    workspace.write_config(f'\n[agents]\npaths = ["{(REGISTRY / "agents").as_posix()}"]\nskill_paths = []\n')
    agents = build_agent_library(workspace.config())
    assert agents.names() == ["incident-responder", "researcher"] and agents.unavailable() == []
    assert agents.tools("researcher") == ["search", "get", "sources", "web-fetch"]
    compiled = agents.compile("incident-responder")
    assert "Keep a running timeline in UTC" in str(compiled)


def test_the_html_block_is_the_same_in_every_script_that_reads_html() -> None:
    """Scripts cannot share code (no ``require``), so the HTML reader is copied; the copies stay equal."""
    blocks = set()
    for rel in ("connectors/rss/connector.lua", "connectors/confluence/connector.lua", "tools/web-fetch/tool.lua"):
        source = (REGISTRY / rel).read_text(encoding="utf-8")
        start, end = source.index("-- HTML: begin"), source.index("-- HTML: end")
        blocks.add(source[start:end])
    assert len(blocks) == 1
