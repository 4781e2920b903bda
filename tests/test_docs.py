"""Documentation checks: everything a user touches is documented (the import boundaries are in
test_architecture.py)."""

from __future__ import annotations

import click

from context_harness.cli import cli
from context_harness.config import Config
from support.paths import REPO

PACKAGE = REPO / "context_harness"
README = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
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
        ScriptConnectorConfig,
    )

    keys = [k for k in config_keys(Config) if not k.startswith("connectors.") and not k.startswith("tools.")]
    keys += [f"connectors.filesystem.NAME.{k}" for k in FilesystemConnectorConfig.model_fields]
    keys += [f"connectors.script.NAME.{k}" for k in ScriptConnectorConfig.model_fields]
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
