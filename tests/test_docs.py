"""Documentation checks: everything a user touches is described in the code and appears in the
generated reference of the docs site (``devtools/``, built by ``mkdocs build``); the README's
Quickstart stays two commands. The import boundaries are in test_architecture.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, get_args, get_origin

import click
import pytest
from pydantic import BaseModel, Field

from context_harness.agents.settings import AgentsSection, InlineAgentConfig
from context_harness.cli import cli
from context_harness.config import Config, from_dict
from context_harness.core.harness import Harness
from context_harness.errors import OUTCOMES, HarnessError
from context_harness.extensions import Extensions
from context_harness.server.schemas import portable_input
from context_harness.tools.base import FunctionTool
from devtools import cli_page, config_page, errors_page, tools_page
from devtools.markdown import Undocumented
from support.paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def sections(page: str) -> dict[str, str]:
    """A Markdown page's text by heading (``"ctx agent init"``, ``"search"``)."""
    out: dict[str, str] = {}
    heading = ""
    for line in page.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            out[heading] = ""
        else:
            out[heading] = out.get(heading, "") + line + "\n"
    return out


def nested_model(annotation: Any) -> tuple[str, type[BaseModel]] | None:
    """``(".NAME.", M)`` for ``dict[str, M]``, ``("[].", M)`` for ``list[M]``, ``(".", M)`` for ``M``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return ".", annotation
    args = get_args(annotation)
    inner = args[-1] if args else None
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return (".NAME." if get_origin(annotation) is dict else "[].", inner)
    return None


def config_keys() -> list[tuple[str, str]]:
    """``(key path, description)`` of every key of ``ctx.toml``; a model met again is documented once."""
    keys: list[tuple[str, str]] = []
    seen: set[type[BaseModel]] = set()

    def walk(model: type[BaseModel], prefix: str) -> None:
        seen.add(model)
        for name, field in model.model_fields.items():
            found = nested_model(field.annotation)
            if found is not None and found[0] == ".":
                walk(found[1], f"{prefix}{name}.")
                continue
            keys.append((prefix + name, field.description or ""))
            if found is not None and found[1] not in seen:
                walk(found[1], prefix + name + found[0])

    for name, field in Config.model_fields.items():
        if name == "agents":  # a plain table in Config, validated by AgentsSection; other keys are agents
            walk(InlineAgentConfig, "agents.NAME.")
            walk(AgentsSection, "agents.")
        elif not field.exclude:
            found = nested_model(field.annotation)
            assert found is not None, f"{name}: a top-level key that is not a section"
            walk(found[1], f"{name}.")
    return keys


def test_every_config_key_is_described_and_in_the_reference() -> None:
    page = config_page.page()
    keys = config_keys()
    assert len(keys) > 80  # the walk reached the connectors, tools, Lua and agent tables
    for key in ("server.bind", "connectors.git.NAME.url", "connectors.script.NAME.sync_interval",
                "tools.script.NAME.path", "agents.NAME.system_prompt", "agents.NAME.arguments[].enum"):
        assert key in dict(keys)
    assert [key for key, description in keys if not description.strip()] == []
    assert [key for key, _ in keys if f"| `{key}` |" not in page] == []


def test_every_cli_command_and_option_is_described_and_in_the_reference() -> None:
    page = sections(cli_page.page())
    checked = 0

    def walk(command: click.Command, path: str) -> None:
        nonlocal checked
        assert (command.help or "").strip(), f"{path}: no help text"
        assert path in page, f"{path}: no section in the CLI reference"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert (param.help or "").strip(), f"{path} {param.opts}: no help="
                for opt in param.opts:
                    assert f"`{opt}" in page[path] or f" {opt}" in page[path], f"{path} {opt}: not in its section"
                checked += 1
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                if not sub.hidden:
                    walk(sub, f"{path} {name}")

    walk(cli, "ctx")
    assert {"ctx sync", "ctx search", "ctx tool test", "ctx agent list", "ctx serve"} <= page.keys()
    assert checked > 40


def test_every_mcp_tool_is_described_and_in_the_reference() -> None:
    page = tools_page.page()
    by_name = sections(page)
    with tempfile.TemporaryDirectory() as folder:
        raw = {"db": {"path": str(Path(folder) / "ctx.sqlite")}, "server": {"compat": ["agentzoo"]},
               "agents": {"paths": [], "skill_paths": [], "reviewer": {"system_prompt": "Review."}},
               "connectors": {"filesystem": {"notes": {"root": folder, "writable": True}}}}
        tools = Harness(from_dict(raw, None), Extensions()).tools()
    names = [tool.name for tool in tools]
    assert {"search", "get", "sources", "agent_list", "agent_inject", "agent_zoo_list_agents", "note_write",
            "note_edit", "note_move", "note_delete"} <= set(names)
    for tool in tools:
        assert tool.description.strip(), tool.name
        assert tool.description in by_name[tool.name]
        # the arguments' schema exactly as tools/list publishes it, every argument described
        assert json.dumps(portable_input(tool.input_schema), indent=2, ensure_ascii=False) in by_name[tool.name]
        assert tools_page.undescribed(tool.input_schema) == [], tool.name
    assert sorted(tools_page.names()) == sorted(names)


def test_every_error_is_in_the_reference_with_its_outcome() -> None:
    rows = [line for line in errors_page.page().splitlines() if line.startswith("| ")]
    for cls, outcome in OUTCOMES.items():
        row = next((r for r in rows if f"`{cls.__name__}`" in r), None)
        if cls is HarnessError:  # the fallback row, named by the classes that take it
            row = next(r for r in rows if "any other" in r)
        assert row is not None, cls.__name__
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
        assert [cells[1], cells[2], cells[4]] == [f"`{cls.code}`", str(outcome.http_status), str(outcome.jsonrpc_code)]
        assert ("protocol error" in cells[3]) is (not outcome.mcp_tool_error)
        assert cells[5], f"{cls.__name__}: no meaning (a docstring)"


def test_the_generator_refuses_what_has_no_description() -> None:
    class Section(BaseModel):
        """A section."""

        described: int = Field(default=1, description="has one")
        bare: int = 2

    walk = config_page.Walk()
    walk.model(Section, "demo", "[demo]")
    assert walk.missing == [f"demo.bare ({Section.__module__}.{Section.__qualname__}.bare)"]

    @click.group(help="A group.")
    def group() -> None: ...

    @group.command()
    @click.option("--quiet", is_flag=True)
    def run(quiet: bool) -> None: ...

    assert cli_page.missing(group) == ["ctx run (its docstring or help=)", "ctx run --quiet (help=)"]

    async def nothing(arguments: dict[str, Any]) -> dict[str, Any]:
        return {}

    bare = FunctionTool(name="bare", title=None, description=" ", run=nothing, input_schema={
        "type": "object", "properties": {"q": {"type": "string"}}})
    assert tools_page.missing([("Tools", "", [bare])]) == ["bare (its description)", "bare: argument q"]
    with pytest.raises(Undocumented, match="2 without a description"):
        raise Undocumented("reference/x.md", ["a", "b"], "the code")


def test_mkdocs_build_strict_succeeds(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]'); .ci/run installs it")
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=REPO, capture_output=True,
        text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-4000:]
    for page in ("config", "cli", "mcp-tools", "errors"):
        assert (tmp_path / "site" / "reference" / page / "index.html").is_file()


def test_quickstart_has_exactly_two_commands() -> None:
    section = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = section.split("```bash\n")[1:]
    commands = [b.split("```", 1)[0].strip() for b in blocks]
    assert len(commands) == 2
    assert commands[1] == "bash .ci/run"
    assert "ctx demo" in commands[0]


def test_the_wheel_carries_every_docs_entry_but_the_screenshots() -> None:
    """The sample knowledge base in a wheel is ``docs/`` listed entry by entry in pyproject.toml (so the
    screenshots stay out): a page or folder added to ``docs/`` must be added there too."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    build = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]["build"]
    included = {source: target for source, target in build["targets"]["wheel"]["force-include"].items()
                if source.startswith("docs/")}
    assert all(target == f"context_harness/sample/{source}" for source, target in included.items())
    entries = {f"docs/{entry.name}" for entry in (root / "docs").iterdir() if not entry.name.startswith(".")}
    assert set(included) == entries - {"docs/img"}


def test_the_reference_pages_in_the_repository_are_current() -> None:
    """docs/reference/{config,cli,mcp-tools,errors}.md are generated from the code and committed, so a
    checkout and a wheel hold them; a change to a key, an option, a tool or an error must regenerate them."""
    from devtools.reference import WRITE_COMMAND, stale

    assert stale() == [], f"stale reference pages: run `{WRITE_COMMAND}` and commit them"


def test_the_reference_check_notices_a_stale_page() -> None:
    from devtools import reference

    path = REPO / "docs" / "reference" / "errors.md"
    committed = path.read_text(encoding="utf-8")
    assert reference.stale({path: committed}) == []
    assert reference.stale({path: committed + "\nA line the code does not make.\n"}) == ["docs/reference/errors.md"]
    assert reference.stale({REPO / "docs" / "reference" / "not-there.md": "text"}) == ["docs/reference/not-there.md"]


def test_every_docs_page_the_code_names_exists() -> None:
    """Messages, comments and the config `ctx init` writes name docs pages; each is in a checkout (and, as
    docs/ is the wheel's sample knowledge base, in the installed package, where `ctx help` prints it)."""
    named: dict[str, str] = {}
    for source in sorted((REPO / "context_harness").rglob("*.py")):
        for found in re.findall(r"docs/((?:reference|how-to|explanation)/[\w.-]+\.md|[\w-]+\.md)",
                                source.read_text(encoding="utf-8")):
            named.setdefault(found, source.relative_to(REPO).as_posix())
    assert "reference/config.md" in named
    assert [f"docs/{page} (named in {where})" for page, where in named.items()
            if not (REPO / "docs" / page).is_file()] == []


def test_ctx_help_prints_a_page_of_the_bundled_docs_offline(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    command = [sys.executable, "-m", "context_harness", "help"]
    config = subprocess.run([*command, "config"], capture_output=True, text=True, env=env, timeout=60)
    assert config.returncode == 0, config.stderr
    assert config.stdout == (REPO / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    listing = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert re.search(r"^reference/mcp-tools +MCP tools reference$", listing.stdout, re.MULTILINE), listing.stdout
    assert "how-to/agents" in listing.stdout and "reference/agents" in listing.stdout
    agents = subprocess.run([*command, "how-to/agents"], capture_output=True, text=True, env=env, timeout=60)
    assert agents.stdout.startswith("# Define and use agents")
    missing = subprocess.run([*command, "nowhere"], capture_output=True, text=True, env=env, timeout=60)
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr == "error: no page 'nowhere' in the bundled documentation; `ctx help` lists them\n"


def test_the_demo_leaves_the_generated_reference_pages_out() -> None:
    from context_harness.sample import GENERATED, demo_config
    from devtools.pages import PAGES

    assert sorted(GENERATED) == sorted(PAGES)
    assert demo_config(Path("demo")).connectors.filesystem["sample"].exclude_globs == list(GENERATED)
