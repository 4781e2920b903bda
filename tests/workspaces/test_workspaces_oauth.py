"""``ctx serve --http --workspaces FILE`` with the registry's ``[server.oauth]`` (issue 52, item 4): a
real server, the MCP SDK's OAuth client signing in through the console's authorization page, where the
owner ticks which workspaces (and what in each) the client gets. A token sees, searches, reads and
writes only where its scopes (``read:NAME``, ``write:NAME``; ``read`` for all) say, and is told of no
other workspace: not in ``workspaces``, the search fan-out, ``get``, the instructions or its errors."""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from support.http import free_port, spawn_http, stop_process
from support.oauth import MemoryStorage, OAuthServer, Owner, approve_workspaces, sdk_provider
from support.workspace import config_toml, write_files

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

OWNER = "registry-owner-token-5d1c"


@dataclass
class Served:
    url: str
    server: OAuthServer  # what sdk_provider needs (its url)


def workspace(root: Path, docs: dict[str, str]) -> Path:
    write_files(root / "docs", docs)
    path = root / "ctx.toml"
    path.write_text(config_toml(docs_root=(root / "docs").as_posix(), server="sync_on_start = true")
                    .replace('root = "', 'writable = true\nroot = "'), encoding="utf-8")
    return path


@pytest.fixture
def served(tmp_path: Path, child_env: dict[str, str]) -> Iterator[Served]:
    notes = workspace(tmp_path / "notes", {"garden.md": "# Garden notes\n\nTomatoes need sun in the garden.\n"})
    work = workspace(tmp_path / "work", {"deploy.md": "# Deploy runbook\n\nStaging first, garden party later.\n"})
    port = free_port()
    file = tmp_path / "workspaces.toml"
    file.write_text(f'[workspaces.notes]\nconfig = "{notes.as_posix()}"\n[workspaces.work]\nconfig = '
                    f'"{work.as_posix()}"\n\n[server]\npublic_url = "http://127.0.0.1:{port}"\n'
                    f'auth_token = "${{CTX_OWNER_TOKEN}}"\n\n[server.oauth]\nenabled = true\n', encoding="utf-8")
    log = (tmp_path / "server.log").open("ab")
    proc = spawn_http(["--workspaces", str(file)], {**child_env, "CTX_OWNER_TOKEN": OWNER}, port, stderr=log)
    log.close()
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):  # both workspaces indexed
        hits = httpx2.post(f"{url}/tools/search", json={"query": "garden"}, headers=bearer(OWNER), timeout=30).json()
        if {hit["workspace"] for hit in hits.get("results", [])} == {"notes", "work"}:
            break
        time.sleep(0.1)
    yield Served(url, OAuthServer(url, tmp_path, file, proc, port))
    stop_process(proc)
    assert (tmp_path / "workspaces.oauth.sqlite").is_file()  # the grants, beside the registry


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def approve(authorization_url: str, base: str, scopes: list[str]) -> str:
    """The owner ticks ``scopes`` on the page, which offers a box per workspace and one for all."""
    async with httpx2.AsyncClient(timeout=30) as http:
        first = await http.get(authorization_url)
        page = await http.get(first.headers["location"], headers=bearer(OWNER))  # the console takes the bearer
        assert 'value="write:work"' in page.text and 'value="read"' in page.text, page.text[:400]
    return await approve_workspaces(authorization_url, base, scopes, OWNER)


def signed_in(served: Served, scopes: list[str], storage: MemoryStorage) -> httpx2.AsyncClient:
    owner = Owner(lambda url: approve(url, served.url, scopes))
    return httpx2.AsyncClient(auth=sdk_provider(served.server, owner, storage), timeout=30)


async def test_a_refreshed_token_keeps_its_workspaces(served: Served) -> None:
    storage = MemoryStorage()
    owner = Owner(lambda url: approve(url, served.url, ["read:work"]))
    auth = sdk_provider(served.server, owner, storage)
    tokens = []
    for _ in range(2):  # the second time the SDK refreshes a token it believes expired
        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
            async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client:
                found = (await client.call_tool("search", {"query": "garden"})).structured_content
                assert {hit["workspace"] for hit in found["results"]} == {"work"}  # type: ignore[index]
        tokens.append(storage.tokens)
        auth.context.token_expiry_time = 1.0
    first, second = tokens
    assert first is not None and second is not None and second.access_token != first.access_token
    assert len(owner.sent_to) == 1 and first.scope == "read:work"


def text(result: object) -> str:
    return str(result.content[0].text)  # type: ignore[attr-defined]


async def test_a_client_granted_one_workspace_sees_and_searches_only_that_one(served: Served) -> None:
    owned = httpx2.post(f"{served.url}/tools/search", json={"query": "runbook", "workspace": "work"},
                        headers=bearer(OWNER)).json()["results"]
    work_id = owned[0]["id"]
    storage = MemoryStorage()
    async with signed_in(served, ["read:notes"], storage) as http:
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client:
            said = client.instructions or ""
            assert "several workspaces" in said and not re.search(r"\b(work|notes)\b", said), said
            listed = (await client.call_tool("workspaces", {})).structured_content
            assert [w["name"] for w in listed["workspaces"]] == ["notes"]  # type: ignore[index]
            found = (await client.call_tool("search", {"query": "garden"})).structured_content
            assert {hit["workspace"] for hit in found["results"]} == {"notes"}  # type: ignore[index]
            for refused in (await client.call_tool("search", {"query": "garden", "workspace": "work"}),
                            await client.call_tool("get", {"id": f"work:{work_id}"})):
                assert refused.is_error  # as a workspace that does not exist: named by no answer
                assert "unknown workspace 'work'; the workspaces are: notes" in text(refused)
            bare = await client.call_tool("get", {"id": work_id})
            assert bare.is_error and "no document with id" in text(bare) and "(notes)" in text(bare)
            write = await client.call_tool("note_write", {"workspace": "notes", "source": "docs", "path": "n.md", "content": "x"})
            assert write.is_error and "insufficient_scope" in text(write) and "'write:notes'" in text(write)
    assert storage.tokens is not None and storage.tokens.scope == "read:notes"
    token = storage.tokens.access_token
    rest = httpx2.post(f"{served.url}/tools/search", json={"query": "garden"}, headers=bearer(token)).json()
    assert {hit["workspace"] for hit in rest["results"]} == {"notes"}
    other = httpx2.post(f"{served.url}/tools/get", json={"id": work_id}, headers=bearer(token))
    assert other.status_code == 404 and not re.search(r"\bwork\b", other.json()["error"]["message"])


async def test_a_client_may_watch_only_the_documents_it_may_read(served: Served) -> None:
    """Subscriptions (2026 listen streams and 2025 resources/subscribe) to a document of a workspace the
    token cannot see are refused as its read is: no update of it ever reaches that client."""
    hits = httpx2.post(f"{served.url}/tools/search", json={"query": "garden"}, headers=bearer(OWNER)).json()["results"]
    ids = {hit["workspace"]: hit["id"] for hit in hits}
    hidden = [f"ctx://documents/work:{ids['work']}", f"ctx://documents/{ids['work']}"]
    async with signed_in(served, ["read:notes"], MemoryStorage()) as http:
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client:
            for uri in hidden:
                with pytest.raises(MCPError, match="unknown workspace 'work'|no document with id"):
                    async with client.listen(resource_subscriptions=[uri]) as stream:
                        with anyio.fail_after(5):
                            await stream.__anext__()
            async with client.listen(resource_subscriptions=[f"ctx://documents/{ids['notes']}"]):
                pass  # its own workspace's document: accepted
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http), mode="legacy") as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # resources/subscribe is deprecated for 2026-era servers only
                for uri in hidden:
                    with pytest.raises(MCPError, match="unknown workspace 'work'|no document with id"):
                        await client.subscribe_resource(uri)
                await client.subscribe_resource(f"ctx://documents/{ids['notes']}")


async def test_a_client_granted_both_sees_both(served: Served) -> None:
    storage = MemoryStorage()
    async with signed_in(served, ["read:notes", "read:work"], storage) as http:
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client:
            listed = (await client.call_tool("workspaces", {})).structured_content
            assert [w["name"] for w in listed["workspaces"]] == ["notes", "work"]  # type: ignore[index]
            found = (await client.call_tool("search", {"query": "garden"})).structured_content
            assert {hit["workspace"] for hit in found["results"]} == {"notes", "work"}  # type: ignore[index]


async def test_a_write_scope_for_one_writes_there_and_not_in_the_other(served: Served) -> None:
    storage = MemoryStorage()
    async with signed_in(served, ["write:notes", "read:work"], storage) as http:
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client:
            wrote = await client.call_tool("note_write", {"workspace": "notes", "source": "docs", "path": "idea.md",
                                                          "content": "# Idea\n\nPlant basil.\n"})
            assert not wrote.is_error, text(wrote)
            refused = await client.call_tool("note_write", {"workspace": "work", "source": "docs", "path": "idea.md",
                                                            "content": "# Idea\n"})
            assert refused.is_error and "insufficient_scope" in text(refused) and "'write:work'" in text(refused)
    assert storage.tokens is not None and storage.tokens.scope == "read:notes read:work write:notes"
    assert (served.server.root / "notes" / "docs" / "idea.md").is_file()
    assert not (served.server.root / "work" / "docs" / "idea.md").exists()


async def test_without_a_bearer_the_client_is_sent_to_sign_in_and_the_owner_token_sees_all(served: Served) -> None:
    refused = httpx2.post(f"{served.url}/tools/search", json={"query": "garden"})
    assert refused.status_code == 401
    assert 'resource_metadata="' in refused.headers["www-authenticate"]
    wrong = httpx2.post(f"{served.url}/tools/search", json={"query": "garden"}, headers=bearer("nope"))
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
    listed = httpx2.post(f"{served.url}/tools/workspaces", json={}, headers=bearer(OWNER)).json()
    assert [w["name"] for w in listed["workspaces"]] == ["notes", "work"]
    console = httpx2.get(f"{served.url}/ui/search")  # a workspace without a token: the owner logs in
    assert console.status_code == 303 and console.headers["location"].startswith("/ui/login?next=")
    metadata = httpx2.get(f"{served.url}/.well-known/oauth-protected-resource").json()
    assert "work" not in str(metadata) and "notes" not in str(metadata)


async def test_the_owner_grants_only_what_the_client_asked_and_approving_none_refuses(served: Served) -> None:
    from support.oauth import authorize_url, code_of, exchange, pkce, register

    async with httpx2.AsyncClient(timeout=30) as http:
        client = (await register(http, served.url)).json()
        verifier, challenge = pkce()
        asked = authorize_url(served.url, client["client_id"], challenge, scope="read write")  # not agents
        redirect = await approve(asked, served.url, ["write:work", "agents:notes", "read:ghost"])
        tokens = await exchange(http, served.url, client, code_of(redirect).code, verifier)
        assert tokens.status_code == 200 and tokens.json()["scope"] == "read:work write:work"
        listed = await http.post(f"{served.url}/tools/workspaces", json={},
                                 headers=bearer(tokens.json()["access_token"]))
        assert [w["name"] for w in listed.json()["workspaces"]] == ["work"]

        for asked_for in ("read:notes", "read:ghost"):  # a workspace named, or a name not served: the same page
            verifier, challenge = pkce()
            redirect = await approve_workspaces(authorize_url(served.url, client["client_id"], challenge,
                                                              scope=asked_for), served.url, ["read:notes"], OWNER)
            tokens = await exchange(http, served.url, client, code_of(redirect).code, verifier)
            assert tokens.status_code == 200 and tokens.json()["scope"] == "read:notes", tokens.text

        verifier, challenge = pkce()
        refused = await approve(authorize_url(served.url, client["client_id"], challenge), served.url, [])
        assert parse_qs(urlsplit(refused).query)["error"] == ["access_denied"]


def test_the_registry_keeps_its_server_table_through_add_and_remove(tmp_path: Path) -> None:
    from context_harness.config import workspaces as registry

    config = workspace(tmp_path / "one", {"a.md": "# A\n"})
    file = tmp_path / "workspaces.toml"
    file.write_text('[server]\npublic_url = "https://kb.example.com"  # the tunnel\n\n[server.oauth]\n'
                    'enabled = true\n', encoding="utf-8")
    registry.add(file, "one", config)
    registry.remove(file, "one")
    registry.add(file, "one", config)
    assert registry.server_table(file) == {"public_url": "https://kb.example.com", "oauth": {"enabled": True}}
    assert "# the tunnel" in file.read_text(encoding="utf-8")
    assert [entry.name for entry in registry.read(file)] == ["one"]


def test_the_registry_server_table_is_checked_as_a_workspace_one(tmp_path: Path) -> None:
    from context_harness.errors import ConfigError
    from context_harness.server.workspaces import registry_server

    file = tmp_path / "workspaces.toml"
    file.write_text("[server.oauth]\nenabled = true\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[server\]: .*needs \[server\] public_url"):
        registry_server(file)
    file.write_text('[server]\npublic_url = "http://127.0.0.1:7331"\nauth_token = "t0ken-of-the-owner"\n',
                    encoding="utf-8")
    assert registry_server(file) is None  # OAuth off: each workspace's own token, as before
