"""The records of agent runs (``ctx agent run``), in either backend's database: the ``agent_runs`` and
``agent_run_steps`` tables.

A run record is one JSON object the run loop stores after every step, so a run cut short leaves what
it did. It is kept in two parts: the record without its ``steps`` (its head: ``agent_runs.record``,
what a listing shows) and the steps, one row each (``agent_run_steps``, ``seq`` = the step's place
from 0). So listing runs never reads their steps, and adding a step (``add_step``) writes the head
and that one step: its cost does not grow with the run (saving the whole record after every step
did: a run of 2,000 steps took 44 s). ``id``, ``agent``, ``status``, ``started_at`` and
``step_count`` are columns of ``agent_runs``, for the listing's order, filter and count.
``agent_runs.steps`` (the steps as one JSON array, schemas 5 and 6) is NULL since schema 7, whose
migration moves each run's array into rows (``move_steps``).

JSON is written with ASCII escapes: a lone surrogate or a NUL in a model's text is stored as
written, on SQLite and on PostgreSQL (whose text holds no NUL).

The SQL is the same for both backends (``?`` placeholders; PostgreSQL's are substituted); each
backend runs it in its own transactions (``DocumentStore.save_run``/``add_run_step``, and
``PgDocumentStore``'s).
"""

from __future__ import annotations

import json
from typing import Any

REQUIRED = ("id", "agent", "status", "started_at")
MOVE_BATCH = 50  # runs whose steps a migration reads at a time (a run's steps may be a few MB)


class RunSql:
    """The statements, for a connection whose ``execute`` takes ``mark`` placeholders."""

    def __init__(self, mark: str = "?") -> None:
        self.mark = mark

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self.mark) if self.mark != "?" else sql

    def _many(self, conn: Any, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        if hasattr(conn, "executemany"):  # sqlite3
            conn.executemany(self._sql(sql), rows)
        else:  # psycopg: on a cursor (pipelined)
            with conn.cursor() as cursor:
                cursor.executemany(self._sql(sql), rows)

    def _head(self, conn: Any, record: dict[str, Any], step_count: str, params: tuple[Any, ...] = ()) -> None:
        """Insert the head of ``record`` (without its steps), or replace the stored head of its ``id``;
        ``step_count`` is the SQL of the stored count on an update (``excluded.step_count``: the new one)."""
        missing = [key for key in REQUIRED if not isinstance(record.get(key), str)]
        if missing:
            raise ValueError(f"a run record needs {', '.join(missing)} (text); it has {sorted(record)}")
        head = {key: value for key, value in record.items() if key != "steps"}
        conn.execute(self._sql(
            "INSERT INTO agent_runs(id, agent, status, started_at, step_count, record, steps) "
            "VALUES(?,?,?,?,?,?,NULL) "
            "ON CONFLICT(id) DO UPDATE SET agent = excluded.agent, status = excluded.status, "
            f"started_at = excluded.started_at, step_count = {step_count}, record = excluded.record, steps = NULL"),
            (record["id"], record["agent"], record["status"], record["started_at"], *params, json.dumps(head)))

    def save(self, conn: Any, record: dict[str, Any]) -> None:
        """Insert ``record``, or replace the stored record of its ``id``, steps and all (a record
        without ``steps`` has none)."""
        steps = record.get("steps")
        if steps is None:
            steps = []
        if not isinstance(steps, list):
            raise ValueError(f"a run record's steps are a list; {record.get('id')!r} has {type(steps).__name__}")
        self._head(conn, record, "excluded.step_count", (len(steps),))
        conn.execute(self._sql("DELETE FROM agent_run_steps WHERE run_id = ? AND seq >= ?"), (record["id"], len(steps)))
        # a stored step that is the same is not written again (a record saved whole after each step
        # writes its new steps only)
        self._many(conn, "INSERT INTO agent_run_steps(run_id, seq, step) VALUES(?,?,?) ON CONFLICT(run_id, seq) "
                   "DO UPDATE SET step = excluded.step WHERE agent_run_steps.step <> excluded.step",
                   [(record["id"], seq, json.dumps(one)) for seq, one in enumerate(steps)])

    def add_step(self, conn: Any, head: dict[str, Any], step: Any) -> int:
        """Append ``step`` to run ``head['id']`` (made by its first step) and store ``head`` as its
        head (a ``steps`` key in it is ignored); returns the step's place. The head's upsert locks
        the run's row, so concurrent appends to one run each take their own place."""
        text = json.dumps(step)  # before any write: a step that is not JSON stores nothing
        self._head(conn, head, "agent_runs.step_count + 1", (1,))
        (count,) = conn.execute(self._sql("SELECT step_count FROM agent_runs WHERE id = ?"), (head["id"],)).fetchone()
        conn.execute(self._sql("INSERT INTO agent_run_steps(run_id, seq, step) VALUES(?,?,?)"),
                     (head["id"], count - 1, text))
        return int(count) - 1

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
        """The whole record of ``run_id``, its steps in order (one statement: one snapshot of the head
        and the steps); None when there is none."""
        rows = conn.execute(self._sql(
            "SELECT -1 AS seq, record FROM agent_runs WHERE id = ? "
            "UNION ALL SELECT seq, step FROM agent_run_steps WHERE run_id = ? ORDER BY 1"), (run_id, run_id)).fetchall()
        if not rows or rows[0][0] != -1:
            return None
        record = dict(json.loads(rows[0][1]))
        record["steps"] = json.loads("[" + ",".join(step for _, step in rows[1:]) + "]")
        return record

    def move_steps(self, conn: Any) -> None:
        """Schema 7's migration: each run's steps, stored as one JSON array in ``agent_runs.steps``,
        become rows of ``agent_run_steps`` (in their order), and the array goes."""
        while True:
            rows = conn.execute(self._sql("SELECT id, steps FROM agent_runs WHERE steps IS NOT NULL LIMIT ?"),
                                (MOVE_BATCH,)).fetchall()
            if not rows:
                return
            for run_id, text in rows:
                steps = json.loads(text)
                steps = steps if isinstance(steps, list) else [steps]
                self._many(conn, "INSERT INTO agent_run_steps(run_id, seq, step) VALUES(?,?,?)",
                           [(run_id, seq, json.dumps(one)) for seq, one in enumerate(steps)])
                conn.execute(self._sql("UPDATE agent_runs SET steps = NULL, step_count = ? WHERE id = ?"),
                             (len(steps), run_id))
