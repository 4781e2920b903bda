"""OAuth 2.1 on ``ctx serve --http`` (``[server.oauth] enabled``), as the MCP authorization spec
defines it: this server is both the protected resource and its own authorization server.

- ``store.grants`` (the storage layer's): grants in ``oauth.sqlite`` beside the workspace's data, hashed;
- ``provider``: the MCP SDK's provider protocol (registration, codes, tokens, rotation, audience)
  and what the console's authorization page asks of it;
- ``documents``: client ID metadata documents (a URL as ``client_id``), fetched under tight bounds;
- ``routes``: the metadata documents and the ``/authorize``, ``/token``, ``/register``, ``/revoke``
  endpoints, built from the SDK's handlers;
- ``gate``: the bearer check (OAuth tokens or ``[server] auth_token``);
- ``scopes``: the per-tool scope check every MCP call passes (light: stdio serving imports it alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from context_harness.config import Config

if TYPE_CHECKING:
    from context_harness.server.oauth.provider import Provider

STORE_FILE = "oauth.sqlite"


def store_path(config: Config) -> Path:
    """Where a workspace's OAuth grants live: beside its data, whichever storage backend it uses."""
    return config.data_dir / STORE_FILE


def open_provider(config: Config) -> Provider | None:
    """The authorization server of ``config``, or None when ``[server.oauth]`` is off."""
    settings = config.server
    if not settings.oauth.enabled or settings.public_url is None:
        return None
    from context_harness.core.face import GrantStore  # here: serving without OAuth never loads it
    from context_harness.server.oauth.provider import Provider

    return Provider(GrantStore(store_path(config)), settings.oauth, settings.public_url)


__all__ = ["STORE_FILE", "open_provider", "store_path"]
