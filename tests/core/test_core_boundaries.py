"""Architecture and documentation checks: the core imports no adapter; everything a user touches is documented."""

from __future__ import annotations

import ast
from pathlib import Path

import click

from context_harness.cli import cli
from context_harness.config import Config

PACKAGE = Path(__file__).resolve().parents[2] / "context_harness"
README = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
ADAPTERS = {"mcp_server.py", "server_registry.py", "mcp_agents.py", "http_app.py", "cli.py", "cli_support.py", "cli_tools.py", "cli_agents.py",
            "__main__.py"}
FORBIDDEN = ("mcp.server", "starlette", "uvicorn", "click", "rich", "context_harness.mcp_server",
             "context_harness.http_app", "context_harness.cli")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # from pkg import adapter
    return names


def test_core_never_imports_an_adapter() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name in ADAPTERS and path.parent == PACKAGE:
            continue
        for module in imported_modules(path):
            if any(module == f or module.startswith(f + ".") for f in FORBIDDEN):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert offenders == []


STORE_MAY_IMPORT = ("context_harness.store", "context_harness.errors", "context_harness.embedding.base",
                    "context_harness.timestamps")


def test_storage_imports_only_storage_errors_identity_and_timestamps() -> None:
    # One core, thin rims: the store is the bottom layer (no ingest, search, or adapter imports), and
    # only store/ runs SQL against the schema that store/schema.py owns.
    offenders = []
    for path in (PACKAGE / "store").glob("*.py"):
        for module in imported_modules(path):
            if module.startswith("context_harness") and module != "context_harness" and not any(
                    module == m or module.startswith(m + ".") for m in STORE_MAY_IMPORT):
                offenders.append(f"store/{path.name} imports {module}")
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name != "store" and any(word in path.read_text(encoding="utf-8")
                                                 for word in ("CREATE TABLE", "FROM chunks", "FROM documents")):
            offenders.append(f"{path.relative_to(PACKAGE)} runs SQL against the store's schema")
    assert not offenders, offenders


def config_keys(model: type, prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        annotation = field.annotation
        key = f"{prefix}{name}"
        if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
            keys.extend(config_keys(annotation, key + "."))
        else:
            keys.append(key)
    return keys


def test_every_config_key_is_documented() -> None:
    from context_harness.config import (
        FilesystemConnectorConfig,
        GitConnectorConfig,
        ScriptConfig,
    )

    keys = [k for k in config_keys(Config) if not k.startswith("connectors.") and not k.startswith("tools.")]
    keys += [f"connectors.filesystem.NAME.{k}" for k in FilesystemConnectorConfig.model_fields]
    keys += [f"connectors.script.NAME.{k}" for k in ScriptConfig.model_fields]
    missing = [k for k in keys if f"`{k}`" not in README]
    git_keys = [k for k in GitConnectorConfig.model_fields if k not in README]
    assert missing == [] and git_keys == []


def test_every_cli_command_and_option_is_documented() -> None:
    missing = []
    for name, command in cli.commands.items():
        if f"ctx {name}" not in README:
            missing.append(name)
        for param in command.params:
            if isinstance(param, click.Option):
                for opt in param.opts:
                    if opt.startswith("--") and opt not in README:
                        missing.append(f"{name} {opt}")
    assert missing == []


def test_quickstart_has_exactly_two_commands() -> None:
    section = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = section.split("```bash\n")[1:]
    commands = [b.split("```", 1)[0].strip() for b in blocks]
    assert len(commands) == 2
    assert commands[1] == "bash .ci/run"
    assert "ctx demo" in commands[0]
