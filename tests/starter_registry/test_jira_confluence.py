"""registry/connectors/jira and registry/connectors/confluence against local fakes of their REST APIs:
three pages each (startAt/total; ``_links.next``), a 429 with Retry-After waited out, auth errors."""

from __future__ import annotations

import time

import pytest
from starter_registry.fakes import Confluence, Jira, documents, extension, serving

from context_harness.core.harness import Harness
from context_harness.errors import ToolError
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio


def jira_config(base: str, jql: str = "project = OPS ORDER BY updated DESC") -> str:
    return f"""
[lua]
http_allow = ["127.0.0.1"]

[connectors.script.ops]
path = "{extension("connectors/jira/connector.lua")}"
base_url = "{base}/"
jql = "{jql}"
email = "dana@acme.test"
page_size = 2
env = ["JIRA_TOKEN"]
"""


async def test_jira_issues_of_every_page_after_a_429(workspace, monkeypatch) -> None:
    monkeypatch.setenv("JIRA_TOKEN", "ATATT3xFfGF0-good")
    with serving(Jira) as fake:
        fake.token = "ATATT3xFfGF0-good"
        fake.fail_once["search?startAt=2"] = (429, {"Retry-After": "1"}, b"")
        workspace.write_config(jira_config(fake.url))
        async with Harness.open(workspace.config()) as h:
            started = time.monotonic()
            report = await h.sync("script:ops")
            waited = time.monotonic() - started
            issues = await documents(h, "script:ops")
            hit = (await h.search(SearchRequest(query="connection pool latency"))).results[0]
    assert report.total("added") == 5 and waited >= 1.0
    assert [r["query"]["startAt"] for r in fake.requests] == ["0", "2", "2", "4"]
    assert {r["query"]["maxResults"] for r in fake.requests} == {"2"}
    assert fake.requests[0]["query"]["jql"] == "project = OPS ORDER BY updated DESC"
    assert sorted(issues) == ["OPS-42", "OPS-43", "OPS-44", "OPS-45", "OPS-46"]
    spike = issues["OPS-46"]
    assert hit.title == spike.title == "OPS-46: Payment API latency spike after the 14:00 deploy"
    assert spike.source_url == f"{fake.url}/browse/OPS-46" and spike.author == "Dana Whitfield"
    assert spike.created_at == "2026-03-04T13:12:09Z" and spike.updated_at == "2026-03-04T15:40:51Z"
    assert "Suspect the new connection pool settings" in spike.body
    assert "Eli Novak (2026-03-04T14:55:00.000+0100): Pool exhaustion confirmed" in spike.body
    assert spike.metadata == {"key": "OPS-46", "status": "In Progress", "type": "Incident", "assignee": "Eli Novak",
                              "priority": "Highest", "project": "OPS"}
    assert issues["OPS-43"].body == "OPS-43: Nightly backup job skipped on Sunday"  # no description


async def test_jira_cloud_search_jql_paged_by_token_also_when_the_old_search_is_gone(workspace, monkeypatch) -> None:
    monkeypatch.setenv("JIRA_TOKEN", "ATATT3xFfGF0-good")
    with serving(Jira) as fake:
        fake.token = "ATATT3xFfGF0-good"
        fake.retired = True
        workspace.write_config(jira_config(fake.url))
        async with Harness.open(workspace.config()) as h:
            report = await h.sync("script:ops")
            issues = await documents(h, "script:ops")
    assert report.total("added") == 5 and sorted(issues) == ["OPS-42", "OPS-43", "OPS-44", "OPS-45", "OPS-46"]
    assert [(r["path"].rsplit("/", 1)[1], r["query"].get("nextPageToken")) for r in fake.requests] == [
        ("search", None), ("jql", None), ("jql", "CAEaAggCIgwKBzEwMDQ0EgE0"), ("jql", "CAEaAggEIgwKBzEwMDQyEgE2")]
    assert "Pool exhaustion confirmed" in issues["OPS-46"].body


async def test_jira_auth_and_jql_errors_say_what_to_fix(workspace, monkeypatch) -> None:
    with serving(Jira) as fake:
        fake.token = "ATATT3xFfGF0-good"
        workspace.write_config(jira_config(fake.url, jql="project = NOPE"))
        async with Harness.open(workspace.config()) as h:
            monkeypatch.setenv("JIRA_TOKEN", "expired")
            with pytest.raises(ToolError, match=r"Jira answered 401 Unauthorized: check `email` and the API token in JIRA_TOKEN"):
                await h.sync("script:ops")
            monkeypatch.setenv("JIRA_TOKEN", "ATATT3xFfGF0-good")
            with pytest.raises(ToolError, match=r"Jira refused the search \(The value 'NOPE' does not exist for the "
                               r"field 'project'\.\); check `jql`: project = NOPE"):
                await h.sync("script:ops")
            monkeypatch.delenv("JIRA_TOKEN")
            with pytest.raises(ToolError, match=r"JIRA_TOKEN is not set"):
                await h.sync("script:ops")


def confluence_config(base: str, space: str = "ENG") -> str:
    return f"""
[lua]
http_allow = ["127.0.0.1"]

[connectors.script.wiki]
path = "{extension("connectors/confluence/connector.lua")}"
base_url = "{base}/wiki"
space = "{space}"
page_size = 2
env = ["CONFLUENCE_TOKEN"]
"""


async def test_confluence_pages_of_every_page_as_text(workspace, monkeypatch) -> None:
    monkeypatch.setenv("CONFLUENCE_TOKEN", "pat-good")
    with serving(Confluence) as fake:
        fake.token = "pat-good"
        fake.fail_once["content?start=4"] = (429, {"Retry-After": "1"}, b'{"statusCode": 429, "message": "Rate limited"}')
        workspace.write_config(confluence_config(fake.url))
        async with Harness.open(workspace.config()) as h:
            report = await h.sync("script:wiki")
            pages = await documents(h, "script:wiki")
            hit = (await h.search(SearchRequest(query="deployctl rollback"))).results[0]
    assert report.total("added") == 5
    assert [r["query"].get("start") for r in fake.requests] == [None, "2", "4", "4"]
    assert all(r["headers"]["authorization"] == "Bearer pat-good" for r in fake.requests)
    assert hit.title == "Rollback procedure"
    checklist = pages["98305"]
    assert checklist.source_url == f"{fake.url}/wiki/spaces/ENG/pages/98305/Deploy+checklist"
    assert checklist.author == "Gus Ferreira" and checklist.updated_at == "2026-03-02T10:05:31Z"
    assert checklist.created_at == "2025-11-03T09:12:44Z" and checklist.metadata["version"] == 7
    body = checklist.body
    assert "Freeze the release branch and announce it in #deploys." in body
    assert "- Run the smoke suite" in body and "Check the error budget – it must be above 20 %" in body
    assert "Never deploy on Fridays after 15:00." in body
    assert "Heads up" not in body and "<" not in body  # macro parameters and markup are gone
    assert 'deployctl rollback --service payments --to previous && echo "<done>"' in pages["98311"].body
    assert "payments, orders, search, notifications & billing." in pages["98329"].body


async def test_confluence_auth_and_space_errors_say_what_to_fix(workspace, monkeypatch) -> None:
    with serving(Confluence) as fake:
        fake.token = "pat-good"
        workspace.write_config(confluence_config(fake.url, space="NOPE"))
        async with Harness.open(workspace.config()) as h:
            monkeypatch.setenv("CONFLUENCE_TOKEN", "pat-revoked")
            with pytest.raises(ToolError, match=r"Confluence answered 401 Unauthorized: check `email` and the API "
                               "token in CONFLUENCE_TOKEN"):
                await h.sync("script:wiki")
            monkeypatch.setenv("CONFLUENCE_TOKEN", "pat-good")
            with pytest.raises(ToolError, match=r"Confluence answered 404 \(No space with key : NOPE\): check `base_url`"):
                await h.sync("script:wiki")
