"""``[server]`` and ``[ui]``: what a serving process does, the HTTP transport's guards, the console."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


def public_url(text: str) -> str:
    """``text`` as a public base URL (http or https, a host, no query or fragment), without a trailing slash.
    ``ValueError`` naming the expected form otherwise."""
    url = text.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f'expected an absolute http(s) URL such as "https://kb.example.com", got {text!r}')
    return url


class OAuthConfig(_Section):
    """``[server.oauth]``: OAuth 2.1 on `ctx serve --http` for remote connectors (claude.ai, ChatGPT)."""

    enabled: bool = Field(default=False, description="serve as an OAuth 2.1 authorization server and protected "
                          "resource (the MCP authorization spec), so remote connectors can sign in; needs "
                          "[server] public_url and auth_token (the owner logs in to the console with it to approve "
                          "each client)")
    access_token_lifetime: int = Field(default=3600, ge=60, le=86_400, description="seconds an OAuth access token "
                                       "is valid; the client refreshes it after that")
    refresh_token_lifetime: int = Field(default=30 * 86_400, ge=3600, le=365 * 86_400, description="seconds a "
                                        "refresh token is valid; each use rotates it, and a reused one revokes its "
                                        "whole grant")
    max_clients: int = Field(default=100, ge=1, le=100_000, description="most registered OAuth clients not yet "
                             "approved kept at once; one more registration drops the oldest of them")
    registrations_per_minute: int = Field(default=10, ge=1, le=1000, description="dynamic client registrations "
                                          "accepted in any minute (the whole server); one more is answered 429")


class ServerConfig(_Section):
    """``[server]``: what a serving process does (stdio and HTTP), and the HTTP transport's guards."""

    sync_on_start: bool = Field(default=True, description="sync stale connectors in the background when the server "
                                "starts")
    watch: bool = Field(default=True, description="while serving (and in `ctx watch`), watch each filesystem "
                        "connector's root and apply changes as they are saved; false: sources follow their "
                        "sync_interval only")
    bind: str = Field(default="127.0.0.1:7331", description="HOST:PORT that `ctx serve --http` listens on")
    allowed_hosts: list[str] = Field(default_factory=list, description="extra Host header values accepted over HTTP "
                                     "(DNS-rebinding protection)")
    allowed_origins: list[str] = Field(default_factory=list, description="extra Origin header values accepted over "
                                       "HTTP")
    cors_origins: list[str] = Field(default_factory=list, description="origins allowed by CORS (off when empty)")
    auth_token: str | None = Field(default=None, description='bearer token required on every HTTP route but /health, '
                                   'e.g. "${CTX_TOKEN}"; required to serve HTTP on any address but loopback')
    allow_unauthenticated: bool = Field(default=False, description="serve HTTP on a non-loopback address without "
                                        "auth_token anyway (logged loudly at every start)")
    max_body_bytes: int = Field(default=1_048_576, ge=1024, description="bytes an HTTP request body, or one stdio "
                                "message (a line), may have; a larger one is refused (HTTP 413; over stdio a "
                                "JSON-RPC error -32600) and the server goes on")
    agent_tools: bool = Field(default=True, description="offer the agent tools agent_list, agent_get and "
                              "agent_inject (when at least one agent is defined)")
    get_max_chars: int = Field(default=18_000, ge=0, le=1_000_000, description="characters of body a `get` returns "
                               "when the request gives no max_chars (with the chunks listed, a default window "
                               "stays under 25 kB); 0: whole documents, up to the 1,000,000 characters one get returns "
                               "at most")
    compat: list[Literal["agentzoo", "orchestr8"]] = Field(
        default_factory=list, description="Speak the names and shapes of the systems this one replaces.")
    session_idle_timeout: float = Field(default=600, gt=0, le=86_400, description="seconds an MCP session over "
                                        "HTTP may stay idle before the server closes it")
    max_sessions: int = Field(default=1000, ge=1, description="most MCP sessions open at once over HTTP; one more "
                              "initialize is answered 503")
    header_timeout: float = Field(default=10, gt=0, le=600, description="seconds a client has to send a request line "
                                  "and headers before the connection is closed (slowloris)")
    max_connections: int = Field(default=1000, ge=1, description="most HTTP connections open at once; one more is "
                                 "answered 503 and closed")
    exit_with_parent: bool | None = Field(default=None, description="end the server, cleanly, within seconds of "
                                          "the process that started it dying (its client, or the client above a "
                                          "launcher such as uvx), even while something else holds its stdin; "
                                          "unset: over stdio yes, over HTTP no (a daemonised HTTP server is "
                                          "legitimate); false: never, for servers daemonised on purpose")
    public_url: str | None = Field(default=None, description='the URL clients reach `ctx serve --http` at, behind a '
                                   'tunnel or proxy, e.g. "https://kb.example.com"; OAuth and links to the console\'s '
                                   'pages are built on it (unset: none)')
    output_schemas: bool = Field(default=True, description="publish each tool's outputSchema in tools/list and "
                                 "return each result's structuredContent beside its text; false: neither (results "
                                 "are their readable text only, and tools/list about half the size), for clients "
                                 "that use no structured content or show it to the model instead of the text")
    profile: Literal["auto", "standard", "chatgpt"] = Field(
        default="auto", description='the shapes of `search` and `fetch` over MCP: "auto" gives OpenAI\'s clients '
        '(clientInfo name "openai-mcp") ChatGPT connector shapes and every other client the standard ones; '
        '"chatgpt" gives every client ChatGPT\'s; "standard" gives every client the standard ones')

    oauth: OAuthConfig = Field(default_factory=OAuthConfig)

    @field_validator("public_url")
    @classmethod
    def _absolute_url(cls, value: str | None) -> str | None:
        return None if value is None else public_url(value)

    @model_validator(mode="after")
    def _oauth_needs(self) -> ServerConfig:
        if self.oauth.enabled:
            problem = oauth_problem(self.public_url, self.auth_token)
            if problem:
                raise ValueError(f"[server.oauth] enabled = true {problem}")
        return self


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def oauth_problem(url: str | None, token: str | None) -> str | None:
    """Why OAuth cannot be served with this ``public_url`` and ``auth_token``, or None."""
    if url is None:
        return ('needs [server] public_url, the https URL clients reach this server at (e.g. public_url = '
                '"https://kb.example.com", the tunnel\'s or proxy\'s address)')
    parts = urlsplit(url)
    if parts.scheme != "https" and parts.hostname not in LOOPBACK_NAMES:
        return f"needs an https [server] public_url (got {url!r}; plain http is allowed on loopback only)"
    if parts.path not in ("", "/"):
        return f"needs a [server] public_url without a path (got {url!r}): serve the server at the root of its host"
    if not token:
        return ('needs [server] auth_token: the owner logs in to the console with it to approve each client '
                '(e.g. auth_token = "${CTX_TOKEN}")')
    return None


class UiConfig(_Section):
    """``[ui]``: the web console that `ctx serve --http` serves at ``/ui``."""

    enabled: bool | None = Field(default=None, description="serve the web console at /ui (unset: on on loopback binds)")
    read_only: bool = Field(default=False, description="the console shows but never changes anything (no sync, "
                            "no embedding, no agent saved); for shared deployments")
