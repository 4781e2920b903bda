"""The backend fixtures the tests of this folder share: ``backend`` (each test runs on the embedded
store and on a real PostgreSQL), its ``url`` and an open ``harness`` over the sample docs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from support.workspace import Workspace, write_sample_docs

from .test_conformance import BACKENDS, backend_config


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(backend: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("pg_url") if backend == "postgres" else None


@pytest.fixture
async def harness(workspace: Workspace, backend: str, url: str | None) -> AsyncIterator[Harness]:
    fake.register()
    write_sample_docs(workspace)
    async with Harness.open(backend_config(workspace, backend, url)) as h:
        assert h.backend is not None and h.backend.kind == backend
        yield h
