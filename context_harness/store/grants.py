"""Where OAuth grants live: a small SQLite file beside the workspace's data (``oauth.sqlite``, mode 0600).

Registered clients, authorization codes, access and refresh tokens. No token, code or client secret
is stored as given: each is kept as its SHA-256 (they are 256-bit random strings, so a plain hash is
enough to make the file useless to a thief). A *grant* (a "family") is one approval of one client:
the code it started with and every access and refresh token issued from it; revoking it (a reused
code or refresh token, the owner's revoke button) deletes them all at once.

The file is the same whichever storage backend the workspace uses (it holds no documents), and it
survives restarts. Its tables are ``store.schema.OAUTH_SCHEMA``. Methods are blocking; the provider
(``server.oauth``) calls them through ``anyio.to_thread``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from context_harness.store.schema import OAUTH_SCHEMA

KEEP_SPENT = 86_400  # seconds a spent code or rotated refresh token is kept, to recognise its replay


def digest(secret: str) -> str:
    """The stored form of a token, code or client secret."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CodeRow:
    client_id: str
    family: str
    scopes: list[str]
    redirect_uri: str
    explicit: bool
    challenge: str
    resource: str
    expires: float
    used: bool


@dataclass(frozen=True)
class TokenRow:
    kind: str  # "access" or "refresh"
    family: str
    client_id: str
    scopes: list[str]
    resource: str
    expires: float
    used: bool  # a refresh token already exchanged (rotated)
    revoked: bool  # its grant was revoked


@dataclass(frozen=True)
class AuthorizedClient:
    client_id: str
    name: str
    scopes: list[str]
    redirect_uris: list[str]
    granted: float
    last_used: float


class GrantStore:
    """The OAuth state of one server, in ``path`` (created 0600)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        os.chmod(path, 0o600)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10)
        self._db.executescript(OAUTH_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, args)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """The lock and one write transaction: committed when the block ends, rolled back if it raises."""
        with self._lock:
            self._run("BEGIN IMMEDIATE")
            try:
                yield
                self._run("COMMIT")
            except BaseException:
                self._run("ROLLBACK")
                raise

    # -- clients -----------------------------------------------------------------------------------

    def add_client(self, client_id: str, secret: str | None, metadata: dict[str, Any], max_pending: int) -> int:
        """Register a client; drop the oldest never-approved clients beyond ``max_pending``. Returns how
        many were dropped."""
        with self._transaction():
            self._run("INSERT INTO clients (client_id, secret_hash, metadata, created) VALUES (?, ?, ?, ?)",
                      (client_id, digest(secret) if secret else None, json.dumps(metadata), time.time()))
            dropped = self._run(
                "DELETE FROM clients WHERE approved = 0 AND client_id NOT IN (SELECT client_id FROM clients "
                "WHERE approved = 0 ORDER BY created DESC, rowid DESC LIMIT ?)", (max_pending,)).rowcount
        return dropped

    def remember_client(self, client_id: str, metadata: dict[str, Any]) -> None:
        """Keep an approved client that was not registered here (a client ID metadata document)."""
        with self._lock:
            self._run("INSERT INTO clients (client_id, secret_hash, metadata, created, approved) VALUES "
                      "(?, NULL, ?, ?, 1) ON CONFLICT (client_id) DO UPDATE SET metadata = excluded.metadata, "
                      "approved = 1", (client_id, json.dumps(metadata), time.time()))

    def client(self, client_id: str) -> tuple[str | None, dict[str, Any]] | None:
        """``(secret hash, metadata)`` of a registered client, or None."""
        with self._lock:
            row = self._run("SELECT secret_hash, metadata FROM clients WHERE client_id = ?", (client_id,)).fetchone()
        return None if row is None else (row[0], json.loads(row[1]))

    def client_count(self) -> int:
        with self._lock:
            return int(self._run("SELECT count(*) FROM clients").fetchone()[0])

    # -- codes -------------------------------------------------------------------------------------

    def add_code(self, code: str, row: CodeRow) -> None:
        with self._lock:
            self._purge()
            self._run("INSERT INTO codes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                      (digest(code), row.client_id, row.family, " ".join(row.scopes), row.redirect_uri,
                       int(row.explicit), row.challenge, row.resource, row.expires))

    def code(self, code: str) -> CodeRow | None:
        with self._lock:
            row = self._run("SELECT client_id, family, scopes, redirect_uri, explicit, challenge, resource, expires, "
                            "used FROM codes WHERE code_hash = ?", (digest(code),)).fetchone()
        if row is None:
            return None
        return CodeRow(row[0], row[1], row[2].split(), row[3], bool(row[4]), row[5], row[6], row[7], bool(row[8]))

    def spend_code(self, code: str) -> bool:
        """Mark a code used; False when it already was (a replay)."""
        with self._lock:
            cursor = self._run("UPDATE codes SET used = 1 WHERE code_hash = ? AND used = 0", (digest(code),))
            return cursor.rowcount == 1

    # -- grants and tokens ---------------------------------------------------------------------------

    def issue(self, family: str, client_id: str, scopes: list[str], resource: str,
              access: tuple[str, float], refresh: tuple[str, float]) -> None:
        """Store a new access and refresh token of grant ``family`` (created on its first issue)."""
        now, joined = time.time(), " ".join(scopes)
        with self._transaction():
            self._run("INSERT INTO grants (family, client_id, scopes, resource, created, last_used) "
                      "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (family) DO UPDATE SET last_used = excluded.last_used",
                      (family, client_id, joined, resource, now, now))
            self._run("UPDATE clients SET approved = 1 WHERE client_id = ?", (client_id,))
            for kind, (token, expires) in (("access", access), ("refresh", refresh)):
                self._run("INSERT INTO tokens VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                          (digest(token), kind, family, client_id, joined, resource, expires))

    def token(self, token: str) -> TokenRow | None:
        with self._lock:
            row = self._run(
                "SELECT t.kind, t.family, t.client_id, t.scopes, t.resource, t.expires, t.used, g.revoked "
                "FROM tokens t LEFT JOIN grants g ON g.family = t.family WHERE t.token_hash = ?",
                (digest(token),)).fetchone()
        if row is None:
            return None
        return TokenRow(row[0], row[1], row[2], row[3].split(), row[4], row[5], bool(row[6]), row[7] is not None)

    def spend_refresh(self, token: str) -> bool:
        """Mark a refresh token exchanged (rotated); False when it already was (a replay)."""
        with self._lock:
            return self._run("UPDATE tokens SET used = 1 WHERE token_hash = ? AND kind = 'refresh' AND used = 0",
                             (digest(token),)).rowcount == 1

    def revoke_family(self, family: str) -> int:
        """Revoke one grant: its tokens are deleted, the grant kept as revoked. Returns tokens deleted."""
        with self._lock:
            self._run("UPDATE grants SET revoked = ? WHERE family = ? AND revoked IS NULL", (time.time(), family))
            self._run("UPDATE codes SET used = 1 WHERE family = ?", (family,))
            return self._run("DELETE FROM tokens WHERE family = ?", (family,)).rowcount

    def revoke_client(self, client_id: str) -> int:
        """Revoke every grant of a client. Returns how many grants were live."""
        with self._lock:
            families = [r[0] for r in self._run("SELECT family FROM grants WHERE client_id = ? AND revoked IS NULL",
                                                (client_id,)).fetchall()]
        for family in families:
            self.revoke_family(family)
        with self._lock:
            self._run("UPDATE codes SET used = 1 WHERE client_id = ?", (client_id,))
        return len(families)

    def authorized_clients(self) -> list[AuthorizedClient]:
        """Clients with a live grant, most recently used first (one row each, scopes of all its grants)."""
        with self._lock:
            rows = self._run(
                "SELECT g.client_id, c.metadata, group_concat(g.scopes, ' '), min(g.created), max(g.last_used) "
                "FROM grants g JOIN clients c ON c.client_id = g.client_id WHERE g.revoked IS NULL "
                "GROUP BY g.client_id ORDER BY max(g.last_used) DESC").fetchall()
        out = []
        for client_id, metadata, scopes, granted, last_used in rows:
            meta = json.loads(metadata)
            out.append(AuthorizedClient(client_id, str(meta.get("client_name") or client_id),
                                        sorted(set(str(scopes).split())),
                                        [str(u) for u in meta.get("redirect_uris") or []], granted, last_used))
        return out

    def _purge(self) -> None:
        """Forget expired codes and tokens (spent ones a day after they expire); caller holds the lock."""
        now = time.time()
        self._run("DELETE FROM codes WHERE expires < ?", (now - KEEP_SPENT,))
        self._run("DELETE FROM tokens WHERE expires < ?", (now - KEEP_SPENT,))


__all__ = ["AuthorizedClient", "CodeRow", "GrantStore", "TokenRow", "digest"]
