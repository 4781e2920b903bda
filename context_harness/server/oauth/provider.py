"""The authorization server's logic: the MCP SDK's provider protocol over ``GrantStore``, plus what the
console's authorization page asks of it (``Approvals``: a pending request, approve, deny, the
authorized clients, revoke).

Flow: the SDK's ``/authorize`` handler checks the client, its redirect URI, the scopes and PKCE (S256
only), then ``authorize`` keeps the request (in memory, for ``PENDING_SECONDS``) and sends the
browser to the console's page, where the owner, logged in, approves it with scopes or denies it. An
approval mints a code (single use, ``CODE_SECONDS``); the SDK's ``/token`` handler checks the
verifier and redirect URI and ``exchange_authorization_code`` issues an access token
(``access_token_lifetime``) and a refresh token. Each refresh rotates both; a code or refresh token
used twice revokes the whole grant (RFC 6749 §4.1.2, OAuth 2.1 §4.3.1). Tokens are bound to this
server's resource URL (``public_url``); one for another resource is refused. A client is either
registered here (its secret kept hashed) or described by a client ID metadata document
(``documents``; kept once approved, so the console lists it).
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import InvalidScopeError, OAuthClientInformationFull, OAuthToken

from context_harness.config.server import LOOPBACK_NAMES, OAuthConfig
from context_harness.core.face import SCOPES, AuthorizedClient, CodeRow, GrantStore
from context_harness.server.oauth.documents import ClientDocuments, DocumentRefused, is_document_url
from context_harness.server.oauth.scopes import SEPARATOR, scope_names

log = logging.getLogger("context_harness.oauth")

CODE_SECONDS = 120  # an authorization code's life
PENDING_SECONDS = 600  # how long the owner has to answer the authorization page
MAX_PENDING = 200  # authorization requests waiting for the owner at once
MAX_REDIRECT_URIS = 10
MAX_METADATA_BYTES = 16_384
APPROVE_PATH = "/ui/oauth/authorize"


def same_resource(a: str | None, b: str) -> bool:
    """Whether two resource URLs name the same resource: scheme and host case and a trailing slash aside."""
    if not a:
        return False

    def canonical(url: str) -> tuple[str, str, str]:
        parts = urlsplit(url.strip())
        return parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/")

    return canonical(a) == canonical(b)


def redirect_allowed(uri: str) -> bool:
    """A redirect URI this server sends codes to: https, or http on a loopback host (RFC 8252 §7.3); no
    user info or fragment."""
    parts = urlsplit(uri)
    if parts.fragment or not parts.hostname or "@" in parts.netloc:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK_NAMES)


class StoredCode(AuthorizationCode):
    family: str
    spent: bool = False


class StoredRefresh(RefreshToken):
    family: str
    spent: bool = False


class WorkspaceClient(OAuthClientInformationFull):
    """A client of ``--workspaces``: registered for ``read``, ``write`` or ``agents`` (registration names
    no workspace), it may ask for them in one workspace (``read:NAME``), as a client re-authorizing for
    what it was granted does; whatever ``NAME`` says (``authorize`` keeps the names served)."""

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        if requested_scope is None:
            return None
        registered = (self.scope or "").split()
        for scope in requested_scope.split(" "):
            if scope not in registered and scope.partition(SEPARATOR)[0] not in registered:
                raise InvalidScopeError(f"Client was not registered with scope {scope}")
        return requested_scope.split(" ")


@dataclass
class Pending:
    """An authorization request waiting for the owner's answer."""

    client_id: str
    client_name: str
    params: AuthorizationParams
    offered: list[str]
    document: dict[str, Any] | None = None  # a client described by a metadata document: its metadata
    created: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Refusal:
    """Why a bearer token was refused: an ``invalid_token`` description for the client."""

    reason: str


class Provider:
    """``OAuthAuthorizationServerProvider`` over a ``GrantStore``; also the console's ``Approvals``."""

    def __init__(self, store: GrantStore, settings: OAuthConfig, public_url: str,
                 workspaces: list[str] | None = None) -> None:
        self.store = store
        self.workspaces = workspaces  # --workspaces: the names scopes may name (``scopes.workspace_grants``)
        self.settings = settings
        self.issuer = public_url
        self.resource = public_url
        self._pending: dict[str, Pending] = {}
        self.documents = ClientDocuments(urlsplit(public_url).hostname in LOOPBACK_NAMES, redirect_allowed)

    async def _call(self, fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    # -- clients -------------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if is_document_url(client_id) and len(client_id) <= 1000:
            try:
                client = await self.documents.client(client_id)
                return WorkspaceClient.model_validate(client.model_dump()) if self.workspaces else client
            except DocumentRefused as exc:
                log.warning("oauth: refused the client document %r: %s", client_id[:200], exc)
                return None
        if not client_id or len(client_id) > 200:
            return None
        found = await self._call(self.store.client, client_id)
        if found is None:
            return None
        secret_hash, metadata = found
        # The stored secret is its hash: ``HashedClientAuthenticator`` compares hashes.
        kind = WorkspaceClient if self.workspaces else OAuthClientInformationFull
        return kind.model_validate({**metadata, "client_id": client_id, "client_secret": secret_hash})

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        uris = [str(uri) for uri in client_info.redirect_uris or []]
        if not uris or len(uris) > MAX_REDIRECT_URIS:
            raise RegistrationError("invalid_redirect_uri", f"give 1 to {MAX_REDIRECT_URIS} redirect_uris")
        bad = [uri for uri in uris if not redirect_allowed(uri)]
        if bad:
            log.warning("oauth: refused a registration with redirect URI %r", bad[0][:200])
            raise RegistrationError("invalid_redirect_uri", f"redirect URI {bad[0][:200]!r} is refused: use https, or "
                                    "http on localhost, 127.0.0.1 or [::1], without user info or a fragment")
        metadata = client_info.model_dump(mode="json", exclude={"client_id", "client_secret"}, exclude_none=True)
        if len(json.dumps(metadata)) > MAX_METADATA_BYTES:
            raise RegistrationError("invalid_client_metadata", f"client metadata over {MAX_METADATA_BYTES} bytes")
        dropped = await self._call(self.store.add_client, client_info.client_id, client_info.client_secret,
                                   metadata, self.settings.max_clients)
        log.info("oauth: registered client %s (%r, redirect %s)%s", client_info.client_id,
                 (client_info.client_name or "")[:80], uris[0][:200],
                 f"; dropped {dropped} never-approved client(s) over [server.oauth] max_clients" if dropped else "")

    # -- authorization -------------------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and not same_resource(params.resource, self.resource):
            log.warning("oauth: refused client %s: it asked for resource %r, not this server's %s",
                        client.client_id, params.resource[:200], self.resource)
            raise AuthorizeError("invalid_target", f"this server issues tokens for {self.resource} only, not for "
                                 f"{params.resource[:200]!r}")
        asked = params.scopes or (client.scope or " ".join(SCOPES)).split()
        known = scope_names(self.workspaces) if self.workspaces else list(SCOPES)
        offered = [s for s in asked if s in known]
        if self.workspaces:  # KIND:NAME of a name not served: KIND in any workspace (the owner picks; no oracle)
            offered += [f"{k}{SEPARATOR}{n}" for k in SCOPES for n in self.workspaces
                        if any(s.startswith(k + SEPARATOR) and s not in known for s in asked)]
            offered = list(dict.fromkeys(offered))
        if not offered:
            raise AuthorizeError("invalid_scope", f"ask for some of the scopes {', '.join(SCOPES)}")
        self._prune_pending()
        if len(self._pending) >= MAX_PENDING:
            raise AuthorizeError("temporarily_unavailable", "too many authorization requests are waiting for the "
                                 "owner; try again in a few minutes")
        request_id = secrets.token_urlsafe(32)
        document = (client.model_dump(mode="json", exclude={"client_id"}, exclude_none=True)
                    if is_document_url(client.client_id) else None)
        waiting = offered if self.workspaces else ["read", *[s for s in offered if s != "read"]]
        self._pending[request_id] = Pending(client.client_id, (client.client_name or "").strip()[:100], params,
                                            waiting, document)
        log.info("oauth: client %s asks for %s; waiting for the owner's approval", client.client_id, " ".join(offered))
        return f"{self.issuer}{APPROVE_PATH}?request={request_id}"

    def _prune_pending(self) -> None:
        cutoff = time.time() - PENDING_SECONDS
        for key in [k for k, p in self._pending.items() if p.created < cutoff]:
            del self._pending[key]

    def pending(self, request_id: str) -> dict[str, Any] | None:
        """What the authorization page shows of a waiting request, or None (unknown or expired)."""
        self._prune_pending()
        found = self._pending.get(request_id)
        if found is None:
            return None
        redirect = str(found.params.redirect_uri)
        parts = urlsplit(redirect)
        host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else str(parts.hostname)
        netloc = f"{host}:{parts.port}" if parts.port else host  # as the CSP's form-action names it
        shown: dict[str, Any] = {"client_id": found.client_id, "client_name": found.client_name,
                                 "redirect_uri": redirect, "redirect_host": netloc, "redirect_origin": f"{parts.scheme}://{netloc}",
                                 "scopes": [(s, SCOPES[s]) for s in found.offered if s in SCOPES]}
        if self.workspaces:  # the page: a row per workspace (and one for all), a box per scope asked
            kinds = [k for k in SCOPES if any(s == k or s.startswith(k + SEPARATOR) for s in found.offered)]
            rows = [("", "every workspace, and any added later")] if any(s in SCOPES for s in found.offered) else []
            rows += [(name, "") for name in self.workspaces]
            shown["workspace_rows"] = [(name, note, [(k, self._scope(k, name), self._scope(k, name) in self._allowed(
                found.offered)) for k in kinds]) for name, note in rows]
            shown["kinds"] = [(k, SCOPES[k]) for k in kinds]
        return shown

    @staticmethod
    def _scope(kind: str, workspace: str) -> str:
        return f"{kind}{SEPARATOR}{workspace}" if workspace else kind

    def _allowed(self, offered: list[str]) -> set[str]:
        """The scopes a request asking ``offered`` may be granted: each asked, and each workspace's
        share of a scope asked for every workspace."""
        out = set(offered)
        for kind in [s for s in offered if s in SCOPES]:
            out |= {f"{kind}{SEPARATOR}{name}" for name in self.workspaces or []}
        return out

    def _granted(self, offered: list[str], chosen: list[str]) -> list[str]:
        """What the owner's answer grants: ``read`` always with one workspace; with ``--workspaces``, the
        chosen scopes the request allows, each workspace's ``read`` with its ``write`` or ``agents``."""
        if not self.workspaces:
            return ["read", *[s for s in offered if s in chosen and s != "read"]]
        picked = [s for s in chosen if s in self._allowed(offered)]
        reads = {"read" if SEPARATOR not in s else f"read{SEPARATOR}{s.split(SEPARATOR, 1)[1]}" for s in picked}
        return sorted(set(picked) | reads, key=lambda s: (SEPARATOR in s, s))

    async def approve(self, request_id: str, scopes: list[str]) -> str | None:
        """Grant a waiting request ``scopes`` (``read`` always, others if offered); the URL to send the
        browser to (the client's redirect URI with a fresh code), or None when the request is gone."""
        found = self._pending.pop(request_id, None)
        if found is None:
            return None
        granted = self._granted(found.offered, scopes)
        if not granted:  # with --workspaces the owner picked none: as a refusal
            self._pending[request_id] = found
            return self.deny(request_id)
        code = secrets.token_urlsafe(32)
        params = found.params
        row = CodeRow(found.client_id, secrets.token_urlsafe(16), granted, str(params.redirect_uri),
                      params.redirect_uri_provided_explicitly, params.code_challenge, self.resource,
                      time.time() + CODE_SECONDS, False)
        if found.document is not None:  # so the console lists it (and its revoke finds it)
            await self._call(self.store.remember_client, found.client_id, found.document)
        await self._call(self.store.add_code, code, row)
        log.warning("oauth: the owner granted client %s (%r) the scopes %s", found.client_id, found.client_name,
                 " ".join(granted))
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    def deny(self, request_id: str) -> str | None:
        found = self._pending.pop(request_id, None)
        if found is None:
            return None
        log.warning("oauth: the owner refused client %s (%r)", found.client_id, found.client_name)
        return construct_redirect_uri(str(found.params.redirect_uri), error="access_denied",
                                      error_description="the owner refused this client", state=found.params.state)

    async def clients(self) -> list[AuthorizedClient]:
        return list(await self._call(self.store.authorized_clients))

    async def revoke(self, client_id: str) -> int:
        count = int(await self._call(self.store.revoke_client, client_id))
        log.warning("oauth: the owner revoked client %s (%d grant(s))", client_id, count)
        return count

    # -- codes and tokens ----------------------------------------------------------------------------

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str
                                      ) -> StoredCode | None:
        row = await self._call(self.store.code, authorization_code)
        if row is None or row.client_id != client.client_id:
            return None
        return StoredCode(code=authorization_code, scopes=row.scopes, expires_at=row.expires, client_id=row.client_id,
                          code_challenge=row.challenge, redirect_uri=row.redirect_uri,
                          redirect_uri_provided_explicitly=row.explicit, resource=row.resource, family=row.family,
                          spent=row.used)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: StoredCode) -> OAuthToken:
        spent = authorization_code.spent or not await self._call(self.store.spend_code, authorization_code.code)
        if spent:
            await self._call(self.store.revoke_family, authorization_code.family)
            log.warning("oauth: client %s replayed an authorization code; its grant is revoked", client.client_id)
            raise TokenError("invalid_grant", "this authorization code was already used: a code is single-use, so "
                             "every token issued for it is now revoked; authorize again")
        return await self._issue(authorization_code.family, client.client_id, authorization_code.scopes)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> StoredRefresh | None:
        row = await self._call(self.store.token, refresh_token)
        if row is None or row.kind != "refresh" or row.client_id != client.client_id or row.revoked:
            return None
        return StoredRefresh(token=refresh_token, client_id=row.client_id, scopes=row.scopes,
                             expires_at=int(row.expires), resource=row.resource, family=row.family, spent=row.used)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: StoredRefresh,
                                     scopes: list[str]) -> OAuthToken:
        spent = refresh_token.spent or not await self._call(self.store.spend_refresh, refresh_token.token)
        if spent:
            await self._call(self.store.revoke_family, refresh_token.family)
            log.warning("oauth: client %s reused a rotated refresh token; its grant is revoked", client.client_id)
            raise TokenError("invalid_grant", "this refresh token was already used: refresh tokens rotate, "
                             "so a second use means it leaked, and every token of this grant is now revoked; "
                             "authorize again")
        if not same_resource(refresh_token.resource, self.resource):
            raise TokenError("invalid_target", f"this refresh token was issued for {refresh_token.resource}, not for "
                             f"this server ({self.resource})")
        return await self._issue(refresh_token.family, client.client_id, scopes)

    async def _issue(self, family: str, client_id: str, scopes: list[str]) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = time.time()
        await self._call(self.store.issue, family, client_id, scopes, self.resource,
                         (access, now + self.settings.access_token_lifetime),
                         (refresh, now + self.settings.refresh_token_lifetime))
        log.info("oauth: issued tokens to client %s (scopes %s)", client_id, " ".join(scopes))
        return OAuthToken(access_token=access, expires_in=self.settings.access_token_lifetime,
                          scope=" ".join(scopes), refresh_token=refresh)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = await self.verify(token)
        return found if isinstance(found, AccessToken) else None

    async def verify(self, token: str) -> AccessToken | Refusal:
        """The access token ``token`` names, or why it is refused (unknown, revoked, expired, another resource)."""
        row = await self._call(self.store.token, token) if 0 < len(token) <= 200 else None
        if row is None or row.kind != "access":
            return Refusal("unknown or revoked access token; authorize again")
        if row.revoked:
            return Refusal("this access token was revoked; authorize again")
        if not same_resource(row.resource, self.resource):
            return Refusal(f"this access token was issued for {row.resource}, not for this server ({self.resource})")
        if row.expires < time.time():
            return Refusal("this access token expired; use the refresh token for a new one")
        return AccessToken(token=token, client_id=row.client_id, scopes=row.scopes, expires_at=int(row.expires),
                           resource=row.resource, subject="owner")

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        row = await self._call(self.store.token, token.token)
        if row is not None:
            await self._call(self.store.revoke_family, row.family)
            log.warning("oauth: client %s revoked its grant", row.client_id)


__all__ = ["APPROVE_PATH", "Pending", "Provider", "Refusal", "redirect_allowed", "same_resource"]
