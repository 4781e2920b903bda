"""How documents connect, in either backend's database: the ``links`` they make, the ``link_names``
a wikilink may call them by, and the ``changes`` log (``recent``).

Written in the transaction of ``DocumentStore.apply`` / ``PgDocumentStore.apply``; the SQL is the
same for both (``?`` placeholders; PostgreSQL's are substituted). The log keeps the newest
``KEEP_CHANGES`` entries: enough for "what changed this week" in a busy workspace, and a cap on what
a first sync of a large source adds (a hundred thousand ``added`` entries would tell nobody much).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from context_harness.common.links import document_names, extract_links, link_key, may_link, message_links

KEEP_CHANGES = 10_000
FILL_BATCH = 500


class LinkSql:
    """The statements, for a connection whose ``execute`` takes ``mark`` placeholders."""

    def __init__(self, mark: str = "?") -> None:
        self.mark = mark

    def _sql(self, sql: str, count: int = 0) -> str:
        sql = sql.replace("{marks}", ",".join("?" * count))
        return sql.replace("?", self.mark) if self.mark != "?" else sql

    def known(self, conn: Any, ids: Sequence[str]) -> dict[str, tuple]:
        """id -> (id, source, source_id, title) of those of ``ids`` already stored."""
        found: dict[str, tuple] = {}
        for start in range(0, len(ids), FILL_BATCH):
            part = list(ids[start:start + FILL_BATCH])
            rows = conn.execute(self._sql("SELECT id, source, source_id, title FROM documents WHERE id IN ({marks})",
                                          len(part)), part).fetchall()
            found.update({r[0]: tuple(r) for r in rows})
        return found

    def note_changes(self, conn: Any, writes: Sequence[Any], deletes: Sequence[str], at: str,
                     known: dict[str, tuple]) -> None:
        """Log the writes (``added``/``updated``) and deletions, before they happen; ``known`` is what
        ``known`` said of their ids. Only the newest ``KEEP_CHANGES`` of a large batch are written."""
        entries = [(r.id, r.source, r.source_id, r.title, "updated" if r.id in known else "added", at) for r in writes]
        entries += [(*known[d], "deleted", at) for d in deletes if d in known]
        if entries:
            entries = [tuple(_clean(v) for v in e) for e in entries[-KEEP_CHANGES:]]
            conn.cursor().executemany(self._sql(
                "INSERT INTO changes(doc_id, source, source_id, title, kind, at) VALUES(?,?,?,?,?,?)"), entries)
            conn.execute(self._sql("DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - ?"),
                         (KEEP_CHANGES,))

    def write_links(self, conn: Any, writes: Sequence[Any], deletes: Sequence[str] = (),
                    known: dict[str, tuple] | None = None) -> None:
        """Replace the links and names of the written documents (after they are stored); drop those of
        the deleted ones. ``known`` is what ``known`` said before the write: a new document has no rows
        to delete, and a stored one's names follow from its stored path and title (the embedded
        ``link_names`` has no index by document: one b-tree per name row keeps a first sync cheap).
        None: the rows cascade away with the document (PostgreSQL) or there are none yet (a fill)."""
        cur = conn.cursor()
        if known:
            stored = [known[i] for i in [r.id for r in writes] + list(deletes) if i in known]
            cur.executemany(self._sql("DELETE FROM links WHERE doc_id = ?"), [(k[0],) for k in stored])
            cur.executemany(self._sql("DELETE FROM link_names WHERE name = ? AND doc_id = ?"),
                            [(_clean(n), k[0]) for k in stored for n in document_names(k[2], k[3])])
        links, names = [], []
        for r in writes:
            found = extract_links(r.body, r.source_id) if may_link(r.body, r.source_id) else []  # "[": cheap
            if getattr(r, "content_type", None) == "message/rfc822":  # an e-mail: its thread, from its headers
                found += message_links(r.metadata)
            links += [(r.id, link.kind, _clean(link.target), _clean(link_key(link, r.source_id))) for link in found]
            names += [(_clean(name), r.id) for name in document_names(r.source_id, r.title)]
        cur.executemany(self._sql("INSERT INTO links(doc_id, kind, target, key) VALUES(?,?,?,?)"), links)
        cur.executemany(self._sql("INSERT INTO link_names(name, doc_id) VALUES(?,?) ON CONFLICT DO NOTHING"),
                        sorted(names))

    def fill(self, conn: Any) -> None:
        """Extract the links of every stored document (a migration: the bodies are already stored)."""
        after = ""
        while True:
            rows = conn.execute(self._sql("SELECT id, source_id, title, body FROM documents WHERE id > ? "
                                          "ORDER BY id LIMIT ?"), (after, FILL_BATCH)).fetchall()
            if not rows:
                return
            self.write_links(conn, [_Stored(*r) for r in rows])
            after = rows[-1][0]

    # -- reads -------------------------------------------------------------------------------

    def links_from(self, conn: Any, doc_id: str) -> list[tuple[str, str, str]]:
        """(kind, target, key) of each link the document makes."""
        return [tuple(r) for r in conn.execute(self._sql(
            "SELECT kind, target, key FROM links WHERE doc_id = ? ORDER BY rowid" if self.mark == "?" else
            "SELECT kind, target, key FROM links WHERE doc_id = ? ORDER BY seq"), (doc_id,)).fetchall()]

    def links_to(self, conn: Any, keys: list[str]) -> list[tuple[str, str, str, str, str]]:
        """(doc_id, source, kind, target, key) of each link whose key is one of ``keys``."""
        if not keys:
            return []
        return [tuple(r) for r in conn.execute(self._sql(
            "SELECT l.doc_id, d.source, l.kind, l.target, l.key FROM links l JOIN documents d ON d.id = l.doc_id "
            "WHERE l.key IN ({marks})", len(keys)), keys).fetchall()]

    def named(self, conn: Any, names: list[str]) -> list[tuple[str, str, str, str]]:
        """(name, doc_id, source, source_id) of each document a wikilink may call by one of ``names``."""
        if not names:
            return []
        return [tuple(r) for r in conn.execute(self._sql(
            "SELECT n.name, d.id, d.source, d.source_id FROM link_names n JOIN documents d ON d.id = n.doc_id "
            "WHERE n.name IN ({marks})", len(names)), names).fetchall()]

    def at_paths(self, conn: Any, source: str, paths: list[str]) -> dict[str, str]:
        """source_id -> doc_id of the source's documents at ``paths``."""
        if not paths:
            return {}
        rows = conn.execute(self._sql("SELECT source_id, id FROM documents WHERE source = ? AND source_id IN "
                                      "({marks})", len(paths)), [source, *paths]).fetchall()
        return {r[0]: r[1] for r in rows}

    def changes(self, conn: Any, since: str | None, source: str | None, limit: int) -> list[tuple]:
        """(doc_id, source, source_id, title, kind, at) newest first."""
        clauses, params = [], []
        if since:
            clauses.append("at >= ?")
            params.append(since)
        if source:
            clauses.append(f"(source = ? OR substr(source, 1, {len(source) + 1}) = ?)")  # no LIKE: '%' is text
            params += [source, source + ":"]
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        return [tuple(r) for r in conn.execute(self._sql(
            f"SELECT doc_id, source, source_id, title, kind, at FROM changes{where} ORDER BY seq DESC LIMIT ?"),
            [*params, limit]).fetchall()]


def _clean(value: Any) -> Any:
    """Text without NUL characters (PostgreSQL text cannot hold them; the documents drop them too)."""
    return value.replace("\x00", "") if isinstance(value, str) and "\x00" in value else value


class _Stored:
    def __init__(self, id: str, source_id: str, title: str | None, body: str) -> None:
        self.id, self.source_id, self.title, self.body = id, source_id, title, body
