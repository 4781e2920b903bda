"""Storage: the seam the core uses and the two backends behind it.

- ``backend.py``: the seam (``DocumentStorage``, ``KeywordRanking``, ``VectorStorage``, ``Backend``)
  and ``flush_index``; ``opening.py`` opens the backend a config selects and migrates one;
- the embedded backend, one user's default, all in the data folder: ``documents.py`` (SQLite
  documents, chunks, sync state), ``keyword.py`` (the Tantivy index), ``vectors.py`` (vectors in
  SQLite), ``vector_index.py`` and ``ann.py`` (the in-memory vector index), ``writer_lock.py`` (the
  workspace's lock files); ``embedded/`` only puts them behind the seam. These modules stay at this
  level because they also hold what both backends share: ids and rows (``documents.py``), the keyword
  types and stemmer (``keyword.py``), the embedder-identity rules (``vectors.py``);
- ``postgres/``: the PostgreSQL backend (``pgvector``), for replicas on one database;
- shared by both: ``schema.py`` (the SQL schema, its one owner), ``queries.py``, ``faults.py``.
"""
