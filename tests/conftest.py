"""The tests' one set of fixtures. Plain helpers live in ``tests/support`` (importable as ``support``).

Grouped by what they stand up:

- workspaces: ``workspace``/``sample_docs`` (core), ``config_path``/``config``/``harness``/``make_workspace``
  (a knowledge base for the server tests), ``tools_config_path``/``tools_harness``/``make_tools_workspace``
  (Lua tools), ``ws``/``served_config``/``served``/``make_served`` (agents), ``docs``/``config_file``/
  ``child_env`` (subprocesses);
- HTTP servers: ``http_server`` and ``api_url`` (a local JSON API), ``app_server``/``start_server`` (the
  real app under uvicorn), ``http_process`` (``ctx serve --http``);
- fake contexts: ``fake_context`` (Lua scripts), ``agent_context`` (agents);
- Lua scripts: ``write_script``, ``make_tool``, ``make_connector``;
- vectors and models: ``db_path``, ``conn``, ``store``, ``model_cache``, ``local_embedder``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from context_harness.store.schema import migrate
from support.contexts import FakeContext, script_context
from support.contexts import agent_context as new_agent_context
from support.http import (
    LUA_ARTICLES,
    TOOL_ARTICLES,
    AppServer,
    JsonApi,
    LocalServer,
    free_port,
    serve_in_thread,
    spawn_http,
    stop_process,
)
from support.postgres import PostgresCluster, start_cluster
from support.vectors import IDENTITY
from support.workspace import (
    E2E_DOCS,
    AgentWorkspace,
    Workspace,
    config_toml,
    write_files,
    write_knowledge_base,
    write_sample_docs,
    write_served,
    write_tools_workspace,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- workspaces ------------------------------------------------------------------------------------

@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


@pytest.fixture
def sample_docs(workspace: Workspace) -> Workspace:
    return write_sample_docs(workspace)


@pytest.fixture
def make_workspace() -> Callable[..., Path]:
    """``make_workspace(root, server=..., embedding=...)`` -> config path (see ``write_knowledge_base``)."""
    return write_knowledge_base


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return write_knowledge_base(tmp_path)


@pytest.fixture
def config(config_path: Path) -> Any:
    from context_harness import config as config_mod

    return config_mod.load(config_path)


@pytest.fixture
async def harness(config: Any) -> AsyncIterator[Any]:
    """An open, synced Harness over ``write_knowledge_base``."""
    from context_harness.core.harness import Harness

    async with Harness.open(config) as h:
        await h.sync()
        yield h


@pytest.fixture
def make_tools_workspace() -> Callable[..., Path]:
    """``make_tools_workspace(root, extra_toml="")`` -> config path (see ``write_tools_workspace``)."""
    return write_tools_workspace


@pytest.fixture
def tools_config_path(tmp_path: Path) -> Path:
    return write_tools_workspace(tmp_path)


@pytest.fixture
async def tools_harness(tools_config_path: Path) -> AsyncIterator[Any]:
    """An open, synced Harness over ``write_tools_workspace``."""
    from context_harness import config as config_mod
    from context_harness.core.harness import Harness

    async with Harness.open(config_mod.load(tools_config_path)) as h:
        await h.sync()
        yield h


@pytest.fixture
def ws(tmp_path: Path) -> AgentWorkspace:
    return AgentWorkspace(tmp_path)


@pytest.fixture
def make_served() -> Callable[..., Path]:
    """``make_served(root, server="")`` -> config path (see ``write_served``)."""
    return write_served


@pytest.fixture
def served_config(tmp_path: Path) -> Path:
    return write_served(tmp_path)


@pytest.fixture
async def served(served_config: Path) -> AsyncIterator[Any]:
    """An open, synced Harness over ``write_served``."""
    from context_harness import config as config_mod
    from context_harness.core.harness import Harness

    async with Harness.open(config_mod.load_file(served_config)) as h:
        await h.sync()
        yield h


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write_files(root, E2E_DOCS)
    return root


@pytest.fixture
def config_file(tmp_path: Path, docs: Path) -> Path:
    """A ctx.toml naming ``docs`` by absolute path, so a subprocess may run from anywhere."""
    cfg = tmp_path / "ctx.toml"
    cfg.write_text(config_toml(docs_root=str(docs)), encoding="utf-8")
    return cfg


@pytest.fixture
def child_env(tmp_path: Path) -> dict[str, str]:
    """Environment for spawned servers: isolated XDG dirs, nothing else from the test process but
    ``PYTHONPATH`` (so a checkout run with it, a git worktree say, spawns its own code)."""
    kept = ("PATH", "HOME", "LANG", "SYSTEMROOT", "TMPDIR", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k in kept}
    env.update(XDG_DATA_HOME=str(tmp_path / "xdg-data"), XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
               XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), HF_HUB_OFFLINE="1")
    return env


# -- HTTP servers ------------------------------------------------------------------------------------

@pytest.fixture
def http_server() -> Iterator[LocalServer]:
    """The local JSON API (``support.http.JsonApi``) with the Lua tests' articles."""
    with serve_in_thread(JsonApi(LUA_ARTICLES)) as server:
        yield LocalServer(server)


@pytest.fixture
def api_url() -> Iterator[str]:
    """The local JSON API's base URL, with the tool tests' articles."""
    with serve_in_thread(JsonApi(TOOL_ARTICLES)) as server:
        yield LocalServer(server).url


@pytest.fixture
def start_server() -> Iterator[Callable[..., AppServer]]:
    """``start_server(config, agent=None)`` -> a started ``AppServer``; stopped at teardown."""
    started: list[AppServer] = []

    def start(config: Any, agent: str | None = None) -> AppServer:
        server = AppServer(config, agent).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def app_server(config: Any, start_server: Callable[..., AppServer]) -> AppServer:
    """The real HTTP app over ``config`` under uvicorn."""
    return start_server(config)


@pytest.fixture
def http_process(config_file: Path, child_env: dict[str, str]) -> Iterator[str]:
    """``ctx serve --http`` over ``config_file`` in a subprocess; yields its base URL."""
    port = free_port()
    proc = spawn_http(["--config", str(config_file)], child_env, port)
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)


# -- fake contexts -----------------------------------------------------------------------------------

@pytest.fixture
def fake_context() -> FakeContext:
    """What a Lua tool or connector's ``context`` answers (``support.contexts.SCRIPT_DOCS``)."""
    return script_context()


@pytest.fixture
def agent_context() -> FakeContext:
    """What an agent's ``context`` answers (``support.contexts.AGENT_DOCS``)."""
    return new_agent_context()


# -- Lua scripts -------------------------------------------------------------------------------------

@pytest.fixture
def write_script(tmp_path: Path) -> Callable[..., Path]:
    def write(source: str, name: str = "script.lua") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        return path

    return write


@pytest.fixture
def make_tool(write_script: Callable[..., Path]) -> Callable[..., Any]:
    from context_harness.config import LuaConfig, ScriptConfig
    from context_harness.lua.tools import LuaTool

    def make(source: str, *, name: str = "t", lua: LuaConfig | None = None, file: str | None = None,
             **script_keys: Any) -> LuaTool:
        path = write_script(source, file or f"{name}.lua")
        return LuaTool(name, ScriptConfig(path=path, **script_keys), lua or LuaConfig(), max_instances=1)

    return make


@pytest.fixture
def make_connector(write_script: Callable[..., Path]) -> Callable[..., Any]:
    from context_harness.config import LuaConfig, ScriptConfig
    from context_harness.lua.connector import LuaConnector

    def make(source: str, *, name: str = "c", lua: LuaConfig | None = None, **script_keys: Any) -> LuaConnector:
        path = write_script(source, f"{name}.lua")
        return LuaConnector(name, ScriptConfig(path=path, **script_keys), lua or LuaConfig())

    return make


# -- vectors and models ------------------------------------------------------------------------------

@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A SQLite file in WAL mode with the real schema (tests write chunks rows without documents)."""
    path = tmp_path / "ctx.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    migrate(conn)
    conn.close()
    return path


@pytest.fixture
def conn(db_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(db_path, check_same_thread=False)
    yield connection
    connection.close()


@pytest.fixture
def store(conn: sqlite3.Connection) -> Any:
    from context_harness.store.vectors import VectorStore

    vectors = VectorStore(conn)
    vectors.set_identity(IDENTITY)
    return vectors


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="session")
def local_embedder(model_cache: Path) -> Any:
    """The real bundled model (loaded once per test session)."""
    from context_harness.config import EmbeddingConfig
    from context_harness.embedding.local import LocalEmbedder

    return LocalEmbedder(EmbeddingConfig(threads=1), cache_dir=model_cache)


# -- PostgreSQL ------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One PostgreSQL per test session (``support/postgres.py``): ``CTX_TEST_DATABASE_URL`` or pgserver.
    Tests using it skip, saying why, only when neither is available."""
    try:
        cluster = start_cluster()
    except RuntimeError as exc:
        pytest.skip(f"no PostgreSQL for the postgres backend tests: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """The URL of a fresh database (with pgvector) for one test, dropped afterwards."""
    url = postgres_cluster.fresh_database()
    yield url
    postgres_cluster.drop(url)
