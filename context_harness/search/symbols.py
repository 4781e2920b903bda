"""Searching code by symbol: ``symbol:NAME`` in a query, and the definition a result shows.

Code read by symbol (``ingest/code_chunking.py``) has a chunk per definition headed by its symbol path,
and the keyword index knows every path a document defines (``store/keyword.py``: the ``symbol``
field, which ranks a document defining a name the query says first and serves the symbol filter).
A query naming a symbol in a form no prose word takes (``Harness.open``, ``ns::run``, ``open_stores``,
``openStores``), or a symbol filter, makes each result show the chunk defining it, so its ``chunk``
is the one to ``get``.
"""

from __future__ import annotations

import re
from itertools import islice

from context_harness.models import SearchFilters, SearchRequest
from context_harness.store.backend import DocumentStorage
from context_harness.store.keyword import query_symbols, symbol_key
from context_harness.store.records import StoredChunk

MAX_CHUNKS_READ = 5_000
_INLINE = re.compile(r"(?<!\S)symbol:(\S+)")


def with_inline_symbol(request: SearchRequest) -> SearchRequest:
    """``request`` with a ``symbol:NAME`` of its query turned into ``filters.symbol`` (the query keeps
    ``NAME`` as words, which rank and cut the snippet); unchanged without one or when a filter names one."""
    found = _INLINE.search(request.query)
    if found is None or (request.filters is not None and request.filters.symbol):
        return request
    query = _INLINE.sub(lambda m: m.group(1), request.query, count=1)
    filters = (request.filters or SearchFilters()).model_copy(update={"symbol": found.group(1)})
    return request.model_copy(update={"query": query, "filters": filters})


def symbol_names(request: SearchRequest) -> list[str]:
    """The symbols a request names: its filter's, and the query's (``store.keyword.query_symbols``)."""
    names = [symbol_key(request.filters.symbol)] if request.filters is not None and request.filters.symbol else []
    names.extend(query_symbols(request.query))
    return list(dict.fromkeys(name for name in names if name))


def definition_chunk(store: DocumentStorage, doc_id: str, names: list[str]) -> StoredChunk | None:
    """The first chunk of a document whose symbol path ends with one of ``names`` (the first name that
    any chunk defines wins; a module's own chunk, whose path is the name, last), else None. Reads at
    most ``MAX_CHUNKS_READ`` chunks (a huge document is not read whole for this)."""
    chunks = [(symbol_key(c.heading), c) for c in islice(store.iter_chunks(doc_id), MAX_CHUNKS_READ) if c.heading]
    for name in names:
        if found := next((chunk for key, chunk in chunks if key.endswith("." + name)), None):
            return found
    return next((chunk for name in names for key, chunk in chunks if key == name), None)


__all__ = ["definition_chunk", "symbol_names", "with_inline_symbol"]
