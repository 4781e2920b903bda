"""registry/connectors/github-issues against a local fake of the GitHub REST API: three pages linked by
the Link header, a rate-limit answer waited out, comments, pull requests left out, a bad token."""

from __future__ import annotations

import time

import pytest
from starter_registry.fakes import GitHub, documents, extension, serving

from context_harness.core.harness import Harness
from context_harness.errors import ToolError
from context_harness.models import SearchRequest

pytestmark = pytest.mark.anyio


def issues_config(base: str, **extra: object) -> str:
    keys = "".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}\n" for k, v in extra.items())
    return f"""
[lua]
http_allow = ["127.0.0.1"]

[connectors.script.rocket]
path = "{extension("connectors/github-issues/connector.lua")}"
repo = "acme/rocket"
base_url = "{base}"
env = ["GITHUB_TOKEN"]
{keys}"""


async def test_issues_of_every_page_with_comments_after_a_rate_limit(workspace, monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_good")
    with serving(GitHub) as fake:
        fake.token = "ghp_good"
        fake.fail_once["issues?page=2"] = fake.rate_limit_answer(reset_in=1)
        workspace.write_config(issues_config(fake.url, comments=True))
        async with Harness.open(workspace.config()) as h:
            started = time.monotonic()
            report = await h.sync("script:rocket")
            waited = time.monotonic() - started
            issues = await documents(h, "script:rocket")
            hit = (await h.search(SearchRequest(query="turbopump cavitation"))).results[0]
    assert report.total("added") == 6 and report.sources[0].skipped == 0
    assert sorted(issues) == [f"acme/rocket#{n}" for n in (51, 52, 53, 54, 55, 57)]  # #56 is a pull request
    assert waited >= 1.0  # it waited for the reset, then fetched page 2 again
    pages = [(r["path"], r["query"].get("page")) for r in fake.requests if r["path"].endswith("/issues")]
    assert pages == [("/repos/acme/rocket/issues", None), ("/repositories/712345678/issues", "2"),
                     ("/repositories/712345678/issues", "2"), ("/repositories/712345678/issues", "3")]
    assert all(r["headers"]["authorization"] == "Bearer ghp_good" for r in fake.requests)
    assert fake.requests[0]["query"] == {"state": "all", "per_page": "100", "sort": "updated", "direction": "desc"}

    pump = issues["acme/rocket#57"]
    assert hit.title == "Turbopump cavitation at 80% throttle"
    assert pump.source_url == "https://github.com/acme/rocket/issues/57" and pump.author == "ann-okafor"
    assert pump.created_at == "2026-03-02T09:14:22Z" and pump.updated_at == "2026-03-05T16:40:03Z"
    assert "Inlet pressure dips below the NPSH margin" in pump.body
    assert "**bo-lindqvist** (2026-03-03T12:30:00Z):\nRaising the tank pressure" in pump.body
    assert "Confirmed on static fire #15" in pump.body
    assert pump.metadata["state"] == "open" and pump.metadata["number"] == 57
    assert pump.metadata["assignees"] == ["bo-lindqvist"] and pump.metadata["pull_request"] is False
    assert "handover happens exactly at separation" in issues["acme/rocket#55"].body
    assert issues["acme/rocket#53"].body == "# Igniter harness connector corrodes"  # a null body
    assert issues["acme/rocket#54"].metadata["closed_at"] == "2026-02-25T09:01:12Z"


async def test_pull_requests_on_request_and_no_comments_by_default(workspace, monkeypatch) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    with serving(GitHub) as fake:
        workspace.write_config(issues_config(fake.url, include_pull_requests=True))
        async with Harness.open(workspace.config()) as h:
            await h.sync("script:rocket")
            issues = await documents(h, "script:rocket")
    assert len(issues) == 7 and issues["acme/rocket#56"].metadata["pull_request"] is True
    assert "## Comments" not in issues["acme/rocket#57"].body
    assert not any(r["path"].endswith("/comments") for r in fake.requests)
    assert all("authorization" not in r["headers"] for r in fake.requests)  # no token: anonymous


async def test_a_bad_token_and_a_long_rate_limit_fail_with_what_to_do(workspace, monkeypatch) -> None:
    with serving(GitHub) as fake:
        fake.token = "ghp_good"
        workspace.write_config(issues_config(fake.url, max_wait=30))
        async with Harness.open(workspace.config()) as h:
            monkeypatch.setenv("GITHUB_TOKEN", "ghp_revoked")
            with pytest.raises(ToolError, match=r"GitHub answered 401 \(Bad credentials\): the token in GITHUB_TOKEN "
                               "is invalid or expired"):
                await h.sync("script:rocket")
            monkeypatch.setenv("GITHUB_TOKEN", "ghp_good")
            fake.fail_once["issues?page=1"] = fake.rate_limit_answer(reset_in=3600)
            started = time.monotonic()
            with pytest.raises(ToolError, match=r"GitHub rate limit reached; it resets in \d+ s, more than max_wait "
                               r"\(30 s\)\. Set GITHUB_TOKEN for a higher limit"):
                await h.sync("script:rocket")
            assert time.monotonic() - started < 5  # it did not sit out the hour
            assert (await documents(h, "script:rocket")) == {}
