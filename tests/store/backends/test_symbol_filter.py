"""The symbol filter of code search on each backend: the embedded keyword index knows the symbols code
defines; PostgreSQL's keyword ranking does not, so the filter is refused there instead of ignored."""

from __future__ import annotations

import pytest

from context_harness.core.harness import Harness
from context_harness.errors import BadRequest
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio


async def test_symbol_filter_answers_or_is_refused(harness: Harness, backend: str) -> None:
    await harness.sync()
    requests = [SearchRequest(query="sandbox", mode="keyword", filters={"symbol": "Harness.open"}),
                SearchRequest(query="symbol:Harness.open", mode="semantic")]
    for request in requests:
        if backend == "embedded":
            assert (await harness.search(request)).results == []  # no code defines it here
        else:
            with pytest.raises(BadRequest, match="the symbol filter needs the keyword index of the embedded"):
                await harness.search(request)
    assert (await harness.search(SearchRequest(query="sandbox", mode="keyword"))).results  # no filter: answers
