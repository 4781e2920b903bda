"""Faults of the files a workspace lives in, turned into one clear ``StorageFault`` each.

A read-only data folder, a full disk (or a file-size limit), a damaged SQLite file and a damaged
keyword index reach us as ``sqlite3`` errors, ``OSError``s or Tantivy's ``ValueError``/panic with
the OS error in its text. ``fault_of`` recognises them and says what to fix; anything else is left
alone, so unknown errors still surface as ``internal`` (never echoed). ``Harness.run_blocking``
applies it to every blocking call, so the rims see the same error everywhere.
"""

from __future__ import annotations

import datetime as dt
import errno
import logging
import os
import sqlite3
from pathlib import Path

from context_harness.errors import StorageFault

log = logging.getLogger(__name__)

_READ_ONLY = {errno.EACCES, errno.EPERM, errno.EROFS}
_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
_READ_ONLY_TEXT = ("readonly database", "read-only file system", "permission denied", "unable to open database",
                   "os error 13", "os error 30", "os error 1)")
_FULL_TEXT = ("database or disk is full", "no space left", "file too large", "disk quota", "os error 28",
              "os error 27", "os error 122")
_DAMAGED_SQLITE = ("malformed", "not a database", "file is encrypted")


_DATABASE_DOWN = ("OperationalError", "InterfaceError", "PoolTimeout", "PoolClosed", "AdminShutdown")


SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def check_db_path(db_path: Path) -> None:
    """Refuse a ``[db] path`` that is a folder, or an existing file that never was a SQLite database
    (a user's own file: it must not be "repaired", i.e. renamed aside and replaced). A missing or
    empty file is fine: SQLite makes a new database in it. A file whose header is SQLite's but whose
    pages are damaged passes here and is ``sqlite_damaged`` once opened."""
    if db_path.is_dir():
        raise StorageFault(f"[db] path {db_path} is a folder, not a database file; set [db] path to a file name "
                           f"(such as {db_path / 'ctx.sqlite'})", "db_path_folder")
    try:
        with open(db_path, "rb") as file:
            head = file.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except OSError:
        return  # unreadable: opening it gives the read-only or damaged fault with its own advice
    if head and not SQLITE_MAGIC.startswith(head):
        what = "not SQLite"
    elif head == SQLITE_MAGIC and _foreign_tables(db_path):
        what = "a SQLite database of another program"
    else:
        return
    raise StorageFault(f"[db] path {db_path} holds a file that is not a context-harness database ({what}); it was "
                       "left untouched: choose another [db] path, or move that file away", "not_a_database")


def _foreign_tables(db_path: Path) -> bool:
    """A SQLite file with tables but without our ``meta`` table: another program's database. Read
    only; a file SQLite cannot read counts as ours (it is then reported damaged, with its fix)."""
    try:
        conn = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
        try:
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return bool(names) and "meta" not in names


def is_panic(exc: BaseException) -> bool:
    """A Rust panic inside Tantivy (``pyo3_runtime.PanicException``, a ``BaseException``)."""
    return type(exc).__name__ == "PanicException"


def fault_of(exc: BaseException, data_dir: Path) -> StorageFault | None:
    """The ``StorageFault`` ``exc`` stands for, or None when it is not a storage fault."""
    if isinstance(exc, StorageFault):
        return exc
    if type(exc).__module__.startswith(("psycopg", "psycopg_pool")) and type(exc).__name__ in _DATABASE_DOWN:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StorageFault(f"the PostgreSQL database ([db] url) cannot be reached or dropped the connection "
                            f"({reason}); check that it runs and accepts this server, then try again",
                            kind="database_unavailable")
    text = str(exc).lower()
    code = exc.errno if isinstance(exc, OSError) and _inside(exc.filename, data_dir) else None
    if code in _READ_ONLY or (isinstance(exc, (sqlite3.Error, ValueError)) and any(t in text for t in _READ_ONLY_TEXT)):
        return StorageFault(f"the data folder {data_dir} is not writable ({_reason(exc)}); give this user write "
                            "access to it, or set [db] path to a writable place", "read_only")
    if code in _FULL or (isinstance(exc, (sqlite3.Error, ValueError)) and any(t in text for t in _FULL_TEXT)):
        return StorageFault(f"the disk holding {data_dir} is full ({_reason(exc)}); nothing already stored was "
                            "lost: free some space and run the command again", "disk_full")
    if isinstance(exc, sqlite3.OperationalError) and "disk i/o error" in text:
        return StorageFault(f"writing to {data_dir} failed (disk I/O error): the disk is full or failing; "
                            "nothing already stored was lost: free some space, or check the disk, and run the "
                            "command again", "disk_full")
    if isinstance(exc, ValueError) and "index writer was killed" in text:
        return StorageFault(f"writing the keyword index in {data_dir / 'tantivy'} failed (an I/O error, most likely "
                            "a full disk); nothing already stored was lost: free some space and run the command "
                            "again", "disk_full")
    if isinstance(exc, sqlite3.DatabaseError) and any(t in text for t in _DAMAGED_SQLITE):
        return StorageFault(f"the SQLite file in {data_dir} is damaged ({_reason(exc)}); `ctx check --repair` "
                            "moves it aside and reads the sources again", "sqlite_damaged")
    if is_panic(exc) or (isinstance(exc, ValueError) and _from_tantivy(exc)):
        return StorageFault(f"the keyword index in {data_dir / 'tantivy'} is damaged; `ctx check --repair` "
                            "rebuilds it from SQLite", "index_damaged")
    return None


def _inside(filename: object, data_dir: Path) -> bool:
    """An ``OSError`` is ours only when it names a file in the data folder (a source file that
    cannot be read is the connector's business)."""
    if not isinstance(filename, (str, os.PathLike)):
        return False
    try:
        return Path(os.path.abspath(filename)).is_relative_to(os.path.abspath(data_dir))
    except (TypeError, ValueError):
        return False


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, sqlite3.Error):
        return str(exc)
    text = str(exc).lower()
    for phrase in (*_READ_ONLY_TEXT, *_FULL_TEXT):
        if phrase in text and not phrase.startswith("os error"):
            return phrase
    return "the operating system refused the write"


def _from_tantivy(exc: ValueError) -> bool:
    """Tantivy's own I/O and data errors (``DataCorruption``, ``IoError``, ...), not our validation."""
    text = str(exc)
    return any(k in text for k in ("DataCorruption", "IoError", "Failed to open file", "OpenReadError",
                                   "IncompatibleIndex", "corrupted", "Failed to deserialize"))


def set_aside(db_path: Path) -> Path:
    """Rename a damaged SQLite file (and its WAL files) to ``<name>.damaged-<UTC time>``; returns
    the new name. The keyword index beside it is left: the next sync brings it in line."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    target = db_path.with_name(f"{db_path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{db_path}{suffix}")
        if part.exists():
            os.replace(part, Path(f"{target}{suffix}"))
    log.warning("moved the damaged SQLite file %s to %s", db_path, target)
    return target


__all__ = ["SQLITE_MAGIC", "check_db_path", "fault_of", "is_panic", "set_aside"]
