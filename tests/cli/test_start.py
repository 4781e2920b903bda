"""`ctx` starts in a blink: the command modules import the config, the models and the core only in
the command that needs them, so `ctx --version` and `ctx --help` load none of it (0.43 s of CPU
before, 0.07 s after: benchmarks/cli_start.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.workspace import write_knowledge_base

HEAVY = ("pydantic", "context_harness.config", "context_harness.models", "context_harness.core", "anyio", "rich",
         "tantivy", "numpy")


# What a keyword search without a server needs none of (issue 50: <= 0.6 s of CPU): the agents, Lua,
# the registries' resolution, the tools and their catalog, the serving services, the sync, the rims of
# the servers, and the model. Each was imported before, through the core's face and the Harness's mixins.
NOT_FOR_A_KEYWORD_SEARCH = (
    "context_harness.agents", "context_harness.lua", "context_harness.registries.resolve", "context_harness.tools",
    "context_harness.core.catalog", "context_harness.core.scripts", "context_harness.core.services",
    "context_harness.core.live", "context_harness.ingest", "context_harness.server", "context_harness.console",
    "context_harness.embedding.bundled", "lupa", "mcp", "starlette", "uvicorn", "rich", "onnxruntime", "tokenizers",
    "yaml")


def loaded_after(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r} or m.startswith({heavy!r}))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def ctx_code(*args: str) -> str:
    """Python that runs ``ctx ARGS`` in the probe's process (its output goes to stdout before the probe's line)."""
    return f"from context_harness.cli import main\nsys.argv = ['ctx', *{list(args)!r}]\ntry:\n    main()\nexcept SystemExit:\n    pass"


def test_the_command_line_loads_nothing_heavy_to_start() -> None:
    assert loaded_after("import context_harness.cli") == []


def test_version_and_help_load_nothing_heavy() -> None:
    for args in (["--version"], ["--help"], ["sync", "--help"]):
        assert loaded_after(ctx_code(*args)) == [], args


@pytest.mark.parametrize("embedding", ["disabled", "local"])
def test_a_keyword_search_without_a_server_imports_only_what_it_reads_with(tmp_path: Path, embedding: str) -> None:
    """`ctx search --mode keyword` opens the workspace itself (no server answers) and imports none of
    ``NOT_FOR_A_KEYWORD_SEARCH``, whether or not an embedder is configured (the model is not loaded)."""
    cfg = str(write_knowledge_base(tmp_path, embedding=embedding))
    synced = subprocess.run([sys.executable, "-m", "context_harness", "--config", cfg, "sync", "--no-embed"],
                            capture_output=True, text=True, timeout=300)
    assert synced.returncode == 0, synced.stderr
    search = ctx_code("--config", cfg, "search", "--mode", "keyword", "--json", "tantivy")
    assert loaded_after(search, NOT_FOR_A_KEYWORD_SEARCH) == []
    ran = loaded_after(search, ("tantivy", "context_harness.search.engine"))
    assert "tantivy" in ran and "context_harness.search.engine" in ran  # it searched here, with the keyword index
    found = subprocess.run([sys.executable, "-m", "context_harness", "--config", cfg, "search", "--mode", "keyword",
                            "tantivy"], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0 and "Tantivy notes" in found.stdout, found.stderr


def test_the_probe_sees_a_heavy_import() -> None:
    assert "pydantic" in loaded_after("import context_harness.config")
