"""A PostgreSQL that goes away under a serving harness gives one clear ``storage_error`` naming
``[db] url``, never a traceback or ``internal``."""

from __future__ import annotations

import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.errors import StorageFault
from context_harness.models import SearchRequest
from support.postgres import PostgresCluster
from support.workspace import Workspace, backend_config, write_sample_docs

pytestmark = pytest.mark.anyio


async def test_a_database_gone_mid_serving_is_a_storage_error(workspace: Workspace,
                                                              postgres_cluster: PostgresCluster) -> None:
    fake.register()
    write_sample_docs(workspace)
    url = postgres_cluster.fresh_database()
    async with Harness.open(backend_config(workspace, "postgres", url)) as h:
        await h.sync()
        assert (await h.search(SearchRequest(query="tantivy", mode="keyword"))).results
        postgres_cluster.drop(url)  # terminates the pool's connections too
        with pytest.raises(StorageFault, match=r"PostgreSQL database \(\[db\] url\) cannot be reached") as raised:
            await h.search(SearchRequest(query="tantivy", mode="keyword"))
        assert raised.value.code == "storage_error" and raised.value.kind == "database_unavailable"
