"""The Python extension API and the example package in examples/python-extension."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import ConfigError
from context_harness.extensions import (
    Agent,
    Connector,
    Tool,
    collect_extensions,
    load_entry_points,
    prepare_server,
)
from context_harness.models import SearchRequest
from support.paths import REPO

EXAMPLE = REPO / "examples" / "python-extension"
CHANGELOG = "# Changelog\n\n## 1.2.0\n\nAdded the release-notes agent.\n\n## 1.1.0\n\nFixed the sync summary.\n"


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    for name in [m for m in sys.modules if m == "ctxh_example" or m.startswith("ctxh_example.")]:
        monkeypatch.delitem(sys.modules, name)
    import ctxh_example

    return ctxh_example


def _config(tmp_path: Path) -> config_mod.Config:
    return config_mod.from_dict({"db": {"path": str(tmp_path / "ctx.sqlite")},
                                 "embedding": {"provider": "disabled"}}, None)


@pytest.mark.anyio
async def test_agents_extension_registered_in_code(tmp_path: Path, example: Any, agent_context: Any) -> None:
    config = _config(tmp_path)
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG, encoding="utf-8")
    agent, tool = example.ReleaseNotesAgent(), example.WordCount()
    connector = example.ChangelogConnector("changes", {"path": str(tmp_path / "CHANGELOG.md")}, config)
    assert isinstance(agent, Agent) and isinstance(tool, Tool) and isinstance(connector, Connector)

    setup = prepare_server(config, agents=[agent], tools=[tool], connectors=[connector], discover=False)
    assert setup.extensions.tool_names() == ["word_count"]
    assert await tool.call({"text": "two words"}) == {"words": 2, "characters": 9}

    async with Harness.open(config, setup.extensions) as harness:
        assert [(i.name, i.source) for i in harness.agents()] == [("release-notes", "python")]
        assert "word_count" in [t.name for t in harness.tools()]
        prompt = harness.catalog.agent_library.resolve("release-notes", {"version": "1.2.0"}, agent_context)
        assert prompt.system.startswith("You write release notes for version 1.2.0, for users.")
        assert agent_context.requests == [{"query": "1.2.0 changes", "limit": 3}]
        report = await harness.sync()
        assert [(s.source, s.added) for s in report.sources] == [("changelog:changes", 2)]
        hits = (await harness.search(SearchRequest(query="release-notes agent"))).results
        assert hits[0].title == "Changes in 1.2.0"


@pytest.mark.anyio
async def test_agents_extension_clashes_name_both_origins(tmp_path: Path, example: Any) -> None:
    with pytest.raises(ConfigError, match="tool 'word_count' is defined twice: code .* and code"):
        collect_extensions(tools=[example.WordCount(), example.WordCount()], discover=False)
    toml = tmp_path / "ctx.toml"
    toml.write_text('[agents.release-notes]\nsystem_prompt = "x"\n', encoding="utf-8")
    setup = prepare_server(config_mod.load_file(toml), agents=[example.ReleaseNotesAgent()], discover=False)
    async with Harness.open(setup.config, setup.extensions) as harness:  # the second is set aside
        assert [a.name for a in harness.agents()] == ["release-notes"]
        missing = harness.catalog.agent_library.unavailable()
        assert [u.name for u in missing] == ["release-notes"]
        assert re.search(r"'release-notes' is defined twice: \[agents.release-notes\] .* and code", missing[0].message)


@pytest.mark.slow
def test_agents_extension_installed_and_discovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip-installs the example into a --target folder and finds it through importlib.metadata."""
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)  # the build writes egg-info/build folders: keep them out of the repo
    target = tmp_path / "site"
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target), str(source)]
    if importlib.util.find_spec("wheel") is not None:  # setuptools < 70.1 builds wheels only with `wheel`
        command.insert(4, "--no-build-isolation")
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]

    monkeypatch.syspath_prepend(str(target))
    for name in [m for m in sys.modules if m.startswith("ctxh_example")]:
        monkeypatch.delitem(sys.modules, name)
    agents = load_entry_points("context_harness.agents")
    assert [(type(a).__name__, o) for a, o in agents] == [
        ("ReleaseNotesAgent", "entry point 'release-notes' in context_harness.agents (ctxh-example-extension)")]
    ext = collect_extensions()
    assert ext.tool_names() == ["word_count"] and list(ext.connector_types) == ["changelog"]
    assert "changelog" in ext.connector_kinds().types()

    # A connector type from an entry point is configured like a built-in one: [connectors.changelog.NAME]
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG, encoding="utf-8")
    config = config_mod.from_dict({
        "db": {"path": str(tmp_path / "ctx.sqlite")}, "embedding": {"provider": "disabled"},
        "connectors": {"changelog": {"notes": {"path": str(tmp_path / "CHANGELOG.md")}}}}, None)

    async def sync_and_search() -> tuple[list[tuple[str, int]], str | None, str]:
        async with Harness.open(config, prepare_server(config).extensions) as harness:
            report = await harness.sync()
            hits = (await harness.search(SearchRequest(query="release-notes agent"))).results
            return [(s.source, s.added) for s in report.sources], hits[0].title, harness.agents()[0].source

    synced, title, agent_source = anyio.run(sync_and_search)
    assert synced == [("changelog:notes", 2)] and title == "Changes in 1.2.0" and agent_source == "python"
