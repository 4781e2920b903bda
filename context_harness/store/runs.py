"""The records of agent runs (``ctx agent run``), in either backend's database: the ``agent_runs`` table.

A run record is one JSON object the run loop saves after every step, so a run cut short leaves what
it did. It is kept in two parts: the record without its ``steps`` (``record``, what a listing shows)
and the steps (``steps``, a JSON array that may be a few MB), so listing runs never reads their
steps. ``id``, ``agent``, ``status`` and ``started_at`` are also columns, for the listing's order and
filter. JSON is written with ASCII escapes: a lone surrogate or a NUL in a model's text is stored
as written, on SQLite and on PostgreSQL (whose text holds no NUL).

The SQL is the same for both backends (``?`` placeholders; PostgreSQL's are substituted); each
backend runs it in its own transactions (``DocumentStore.save_run``, ``PgDocumentStore.save_run``).
"""

from __future__ import annotations

import json
from typing import Any

REQUIRED = ("id", "agent", "status", "started_at")


class RunSql:
    """The statements, for a connection whose ``execute`` takes ``mark`` placeholders."""

    def __init__(self, mark: str = "?") -> None:
        self.mark = mark

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self.mark) if self.mark != "?" else sql

    def save(self, conn: Any, record: dict[str, Any]) -> None:
        """Insert ``record``, or replace the stored record of its ``id``."""
        missing = [key for key in REQUIRED if not isinstance(record.get(key), str)]
        if missing:
            raise ValueError(f"a run record needs {', '.join(missing)} (text); it has {sorted(record)}")
        head = {key: value for key, value in record.items() if key != "steps"}
        steps = record.get("steps")
        conn.execute(self._sql(
            "INSERT INTO agent_runs(id, agent, status, started_at, step_count, record, steps) VALUES(?,?,?,?,?,?,?) "
            "ON CONFLICT(id) DO UPDATE SET agent = excluded.agent, status = excluded.status, "
            "started_at = excluded.started_at, step_count = excluded.step_count, record = excluded.record, "
            "steps = excluded.steps"),
            (record["id"], record["agent"], record["status"], record["started_at"],
             len(steps) if isinstance(steps, list) else 0, json.dumps(head),
             None if steps is None else json.dumps(steps)))

    def runs(self, conn: Any, limit: int | None, agent: str | None) -> list[dict[str, Any]]:
        """Up to ``limit`` records (None: all), newest first, without ``steps`` but with ``step_count``."""
        sql = "SELECT record, step_count FROM agent_runs"
        params: list[Any] = []
        if agent is not None:
            sql += " WHERE agent = ?"
            params.append(agent)
        sql += " ORDER BY started_at DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(limit, 0))
        return [{**json.loads(record), "step_count": count}
                for record, count in conn.execute(self._sql(sql), params).fetchall()]

    def run(self, conn: Any, run_id: str) -> dict[str, Any] | None:
        """The whole record of ``run_id`` (with its steps), as saved; None when there is none."""
        row = conn.execute(self._sql("SELECT record, steps FROM agent_runs WHERE id = ?"), (run_id,)).fetchone()
        if row is None:
            return None
        record = json.loads(row[0])
        if row[1] is not None:
            record["steps"] = json.loads(row[1])
        return dict(record)
