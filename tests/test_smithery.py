"""``smithery.yaml``: its config schema is a valid JSON Schema that its example satisfies, and its
``commandFunction``, run by Node as Smithery runs it, gives a command ``context-harness`` accepts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from support.paths import REPO

SMITHERY = REPO / "smithery.yaml"
RUN_FUNCTION = """
const fs = require("fs");
const [source, config] = process.argv.slice(2).map((file) => fs.readFileSync(file, "utf8"));
const commandFunction = (0, eval)("(" + source + ")");
process.stdout.write(JSON.stringify(commandFunction(JSON.parse(config))));
"""


@pytest.fixture(scope="module")
def start() -> dict[str, Any]:
    document = yaml.safe_load(SMITHERY.read_text(encoding="utf-8"))
    assert document["startCommand"]["type"] == "stdio"
    return dict(document["startCommand"])


def _validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)  # the meta-schema check: raises SchemaError naming the bad keyword
    return cls(schema)


def test_config_schema_is_valid_and_the_example_satisfies_it(start: dict[str, Any]) -> None:
    validator = _validator(start["configSchema"])
    validator.validate(start["exampleConfig"])
    assert validator.is_valid({"configPath": "/srv/kb/ctx.toml"})
    assert validator.is_valid({"root": "/srv/notes"})
    assert not validator.is_valid({})  # one of the two is needed
    assert not validator.is_valid({"configPath": "/srv/kb/ctx.toml", "root": "/srv/notes"})  # not both
    assert not validator.is_valid({"root": 7})


def _command(start: dict[str, Any], config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: smithery.yaml's commandFunction (JavaScript) cannot be evaluated")
    (tmp_path / "run.js").write_text(RUN_FUNCTION, encoding="utf-8")
    (tmp_path / "function.js").write_text(start["commandFunction"], encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    done = subprocess.run([node, tmp_path / "run.js", tmp_path / "function.js", tmp_path / "config.json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _shapes(tmp_path: Path) -> dict[str, tuple[dict[str, Any], str]]:
    """Each config shape with real paths, and the source ``context-harness`` should then serve."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "welcome.md").write_text("# Welcome\n\nNotes served through Smithery.\n", encoding="utf-8")
    config = tmp_path / "kb" / "ctx.toml"
    config.parent.mkdir()
    config.write_text(f'[connectors.filesystem.team]\nroot = "{notes.as_posix()}"\n', encoding="utf-8")
    return {"configPath": ({"configPath": str(config)}, "filesystem:team"),
            "root": ({"root": str(notes)}, "filesystem:notes")}


@pytest.mark.parametrize("shape", ["configPath", "root"])
def test_command_function_gives_a_command_context_harness_accepts(
    start: dict[str, Any], shape: str, tmp_path: Path, child_env: dict[str, str]
) -> None:
    config, source = _shapes(tmp_path)[shape]
    _validator(start["configSchema"]).validate(config)
    command = _command(start, config, tmp_path)
    assert command["command"] == "uvx" and command["args"][0] == "context-harness", command
    assert isinstance(command.get("env", {}), dict)
    assert list(config.values())[0] in command["args"]  # the user's path reaches the command line
    # The args after the package name go to the installed `context-harness` (uvx would run it so);
    # `sources --json` after them shows the config or folder they name is the one served.
    done = subprocess.run([sys.executable, "-m", "context_harness", *command["args"][1:], "sources", "--json"],
                          cwd=tmp_path, env=child_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [s["name"] for s in json.loads(done.stdout)["sources"]] == [source]


def test_the_example_config_gives_a_command_too(start: dict[str, Any], tmp_path: Path) -> None:
    command = _command(start, start["exampleConfig"], tmp_path)
    assert command["args"] == ["context-harness", "--root", start["exampleConfig"]["root"]]
