"""registry/connectors/rss: an RSS 2.0 and an Atom feed from a local server, synced through the Harness."""

from __future__ import annotations

import json
import time

import pytest
from starter_registry.fakes import Files, documents, extension, serving

from context_harness.core.harness import Harness
from context_harness.errors import ToolError
from context_harness.models import SearchRequest
from support.cli import run_ctx

pytestmark = pytest.mark.anyio


def feeds_config(base: str) -> str:
    return f"""
[lua]
http_allow = ["127.0.0.1"]

[connectors.script.notes]
path = "{extension("connectors/rss/connector.lua")}"
url = "{base}/feed.xml"

[connectors.script.lighthouse]
path = "{extension("connectors/rss/connector.lua")}"
url = "{base}/atom.xml"
"""


async def test_rss_and_atom_entries_become_documents(workspace) -> None:
    with serving(Files) as fake:
        workspace.write_config(feeds_config(fake.url))
        async with Harness.open(workspace.config()) as h:
            rss = await h.sync("script:notes")
            atom = await h.sync("script:lighthouse")
            assert rss.total("added") == 3 and atom.total("added") == 2
            notes = await documents(h, "script:notes")
            lighthouse = await documents(h, "script:lighthouse")

            again = await h.sync("script:notes")  # ids are stable: nothing changes on a re-sync
            assert again.total("unchanged") == 3 and again.total("added") == 0 and again.total("deleted") == 0

            hit = (await h.search(SearchRequest(query="quokkas transect"))).results[0]
            assert hit.title == "Quokka census: spring results" and hit.source == "script:notes"

    census = notes["https://notes.example.org/?p=4182"]  # the guid
    assert census.source_url == "https://notes.example.org/2026/03/quokka-census/"
    assert census.author == "Mira Tan" and census.updated_at == "2026-03-03T18:20:11Z"
    assert "We counted 412 quokkas on the western transect" in census.body
    assert "Juveniles made up a third of the sightings & most were near the salt lake." in census.body
    for dropped in ("alert", "tracking", "wp-block", "wp:image", "<p>", "<strong>"):
        assert dropped not in census.body
    assert census.metadata["feed"] == "Field Notes & Observations"

    weather = notes["https://notes.example.org/2026/02/weather-station-offline/"]
    assert weather.title == "Weather station offline again"  # escaped markup in a title is stripped
    assert "Readings resume once it thaws & the logger reboots." in weather.body and "&lt;" not in weather.body
    assert weather.updated_at == "2026-02-27T07:05:00Z"

    seeds = notes["https://notes.example.org/2026/02/seed-bank/"]  # no guid: the link is the id
    assert seeds.updated_at == "2026-02-08T23:00:00Z"  # +1100 converted
    assert seeds.author is None and "Forty-two species" in seeds.body

    lens = lighthouse["tag:eng.lighthouse.example,2026-03-01:/posts/fresnel-lens"]
    assert lens.title == "Rotating the Fresnel lens & other chores"
    assert lens.source_url == "https://eng.lighthouse.example/posts/fresnel-lens?ref=feed&utm=atom"
    assert lens.author == "Ines Duarte"
    assert lens.created_at == "2026-02-28T08:30:00Z" and lens.updated_at == "2026-03-01T12:00:00Z"
    assert "today a roller bearing does" in lens.body and "the rotation clock stops & the alarm fires" in lens.body
    fog = lighthouse["tag:eng.lighthouse.example,2026-02-10:/posts/fog-signal"]
    assert "two blasts every 60 seconds in fog" in fog.body
    assert fog.source_url == "https://eng.lighthouse.example/posts/fog-signal"


async def test_a_page_that_is_not_a_feed_and_a_missing_feed_fail_clearly(workspace) -> None:
    with serving(Files) as fake:
        workspace.write_config(f"""
[lua]
http_allow = ["127.0.0.1"]

[connectors.script.page]
path = "{extension("connectors/rss/connector.lua")}"
url = "{fake.url}/article.html"

[connectors.script.gone]
path = "{extension("connectors/rss/connector.lua")}"
url = "{fake.url}/missing.xml"
""")
        async with Harness.open(workspace.config()) as h:
            with pytest.raises(ToolError, match=r"failed: http://127\.0\.0\.1:\d+/article\.html is not an RSS or Atom feed"):
                await h.sync("script:page")
            with pytest.raises(ToolError, match=r"/missing\.xml answered HTTP 404; check `url`"):
                await h.sync("script:gone")


def test_as_a_user_runs_it_ctx_sync_then_ctx_search(workspace) -> None:
    """The CLI path: ``ctx connector test`` shows the entries, ``ctx sync`` stores them, ``ctx search`` finds one."""
    with serving(Files) as fake:
        workspace.write_config(feeds_config(fake.url))
        tested = run_ctx("connector", "test", "notes", "--show", "1", cwd=workspace.root)
        synced = run_ctx("sync", "script:notes", "--progress", "none", cwd=workspace.root)
    assert tested.returncode == 0, tested.stderr
    assert "3 items" in tested.stdout and "Quokka census: spring results" in tested.stdout
    assert synced.returncode == 0, synced.stderr
    found = run_ctx("search", "anemometer froze", "--json", cwd=workspace.root)
    assert found.returncode == 0, found.stderr
    (hit,) = json.loads(found.stdout)["results"]
    assert hit["title"] == "Weather station offline again" and hit["source"] == "script:notes"
    assert hit["source_url"] == "https://notes.example.org/2026/02/weather-station-offline/"


HOSTILE_FEEDS = [  # each has one good entry first; what follows would make naive patterns backtrack
    "<item><title>bad</title><description>" + "<" * 200_000 + "</description></item>",
    "<item><title>bad</title><description><![CDATA[" + "<p " * 100_000 + "]]></description></item>",
    "<item>" * 100_000,
    "<item><title>bad</title><pubDate>" + "1 " * 100_000 + "</pubDate><description>x</description></item>",
]


@pytest.mark.parametrize("tail", range(len(HOSTILE_FEEDS)))
async def test_hostile_feeds_are_read_in_linear_time(workspace, tail: int) -> None:
    feed = ('<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><title>Good entry</title>'
            "<guid>g1</guid><description>fine text</description></item>" + HOSTILE_FEEDS[tail] + "</channel></rss>")
    with serving(Files) as fake:
        fake.pages["/hostile.xml"] = ("application/rss+xml", feed.encode())
        workspace.write_config(f"""
[lua]
http_allow = ["127.0.0.1"]

[connectors.script.hostile]
path = "{extension("connectors/rss/connector.lua")}"
url = "{fake.url}/hostile.xml"
timeout = 10
""")
        async with Harness.open(workspace.config()) as h:
            started = time.monotonic()
            await h.sync("script:hostile")
            elapsed = time.monotonic() - started
            docs = await documents(h, "script:hostile")
    assert elapsed < 3, elapsed
    assert docs["g1"].body == "Good entry\n\nfine text"
