"""The S3 connector against an endpoint that misbehaves (``support.unruly``, a scripted server on
127.0.0.1): a listing that is not one fails the sync and deletes nothing, and an endpoint that hangs or
drips its answer is given up within ``timeout``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import NotConfigured, Timeout
from context_harness.models import SearchRequest
from support.unruly import UnrulyServer, unruly_server

pytestmark = pytest.mark.anyio
BUCKET = "kb"
OBJECTS = {f"{name}.md": f"# {name.title()}\n\nThe {name} handbook mentions the zebu.\n"
           for name in ("alpha", "beta", "gamma")}
XML = {"Content-Type": "application/xml"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[UnrulyServer]:
    with unruly_server(tmp_path / "server") as running:
        yield running


def listing(objects: dict[str, str], *, truncated: bool = False, token: str | None = None,
            key_count: int | None = None, root: str = "ListBucketResult", entry: str | None = None) -> str:
    """A ListObjectsV2 answer as S3 writes it."""
    entries = entry if entry is not None else "".join(
        f"<Contents><Key>{key}</Key><LastModified>2026-01-0{1 + len(body) % 8}T00:00:00.000Z</LastModified>"
        f"<ETag>&quot;{abs(hash(body)):x}&quot;</ETag><Size>{len(body)}</Size><StorageClass>STANDARD</StorageClass>"
        "</Contents>" for key, body in objects.items())
    more = f"<NextContinuationToken>{token}</NextContinuationToken>" if token else ""
    count = len(objects) if key_count is None else key_count
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<{root} xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Name>{BUCKET}</Name><Prefix></Prefix><KeyCount>{count}</KeyCount><MaxKeys>1000</MaxKeys>"
            f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>{more}{entries}</{root}>")


def objects_rules(objects: dict[str, str], **get: Any) -> list[dict[str, Any]]:
    """A GET of each object answers its body (``get``: how, e.g. ``stall``)."""
    return [{"match": f"GET /{BUCKET}/{key} ", "body": body, "headers": {"Content-Type": "text/markdown"}, **get}
            for key, body in objects.items()]


def ok_rules(objects: dict[str, str] = OBJECTS) -> list[dict[str, Any]]:
    return [{"match": "list-type=2", "body": listing(objects), "headers": XML}, *objects_rules(objects)]


def s3_config(tmp_path: Path, server: UnrulyServer, timeout: float = 60) -> config_mod.Config:
    path = tmp_path / "ctx.toml"
    path.write_text(f"""[db]
path = "data/ctx.sqlite"

[embedding]
provider = "disabled"

[connectors.s3.kb]
bucket = "{BUCKET}"
endpoint_url = "{server.url}"
region = "us-east-1"
access_key_id = "AKIAUNRULYTEST00001"
secret_access_key = "unruly-secret-value"
timeout = {timeout}
""", encoding="utf-8")
    return config_mod.load_file(path)


async def documents(h: Harness) -> list[str]:
    found = await h.search(SearchRequest(query="zebu handbook", mode="keyword", limit=50))
    return sorted(r.source_id for r in found.results)


async def failing_reason(h: Harness) -> str:
    source = (await h.sources()).sources[0]
    assert (source.status, source.document_count) == ("failing", len(OBJECTS))
    return source.status_reason or ""


BAD_LISTINGS = {
    "an HTML page with 200": ({"body": "<html><head><title>Sign in</title></head><body><p>Log in</p></body></html>",
                               "headers": {"Content-Type": "text/html; charset=utf-8"}},
                              "its Content-Type is 'text/html; charset=utf-8'"),
    "XML cut short": ({"body": listing(OBJECTS)[:300], "headers": XML}, "its XML does not parse"),
    "another root element": ({"body": listing(OBJECTS, root="ListAllMyBucketsResult"), "headers": XML},
                             "its root element is <ListAllMyBucketsResult>"),
    "truncated without a token": ({"body": listing(OBJECTS, truncated=True), "headers": XML},
                                  "truncated but gives no continuation token"),
    "keys counted but missing": ({"body": listing(OBJECTS, entry=""), "headers": XML},
                                 "it counts 3 keys but holds 0"),
    "an entry without a key": ({"body": listing(OBJECTS, entry="<Contents><Size>3</Size></Contents>", key_count=1),
                                "headers": XML}, "an entry of its Contents has no Key"),
}


@pytest.mark.parametrize("case", list(BAD_LISTINGS))
async def test_a_listing_that_is_not_one_fails_the_sync_and_deletes_nothing(tmp_path, server, case) -> None:
    answer, says = BAD_LISTINGS[case]
    server.plan(ok_rules())
    async with Harness.open(s3_config(tmp_path, server)) as h:
        assert (await h.sync()).total("added") == 3
        server.plan([{"match": "list-type=2", **answer}])
        with pytest.raises(NotConfigured) as caught:
            await h.sync()
        message = str(caught.value)
        assert message.startswith("s3:kb: cannot list s3://kb/: the answer is not a valid S3 listing")
        assert says in message and "check endpoint_url" in message and "documents of earlier syncs are kept" in message
        assert await documents(h) == sorted(OBJECTS)  # nothing deleted
        assert says in await failing_reason(h)


@pytest.mark.parametrize("before", ["a page of keys", "a page of nothing indexed"])
async def test_a_later_page_that_is_not_a_listing_keeps_every_document(tmp_path, server, before) -> None:
    """Page 2 is an HTML page: what page 1 listed is synced, nothing is deleted; when page 1 held
    nothing to index (a folder marker), the sync fails with a clear error instead."""
    first = dict(list(OBJECTS.items())[:1]) if before == "a page of keys" else {"folder/": ""}
    server.plan(ok_rules())
    async with Harness.open(s3_config(tmp_path, server)) as h:
        assert (await h.sync()).total("added") == 3
        server.plan([{"match": "continuation-token=", "body": "<html><body>oops</body></html>",
                      "headers": {"Content-Type": "text/html"}},
                     {"match": "list-type=2", "body": listing(first, truncated=True, token="page-2"), "headers": XML},
                     *objects_rules(OBJECTS)])
        if before == "a page of keys":
            summary = (await h.sync()).sources[0]
            assert (summary.deleted, summary.skipped_reasons) == (0, {"scan_error": 1})
        else:
            with pytest.raises(NotConfigured, match="listing s3://kb/ failed part-way: the answer is not a valid S3 "
                                                    "listing: its Content-Type is 'text/html'"):
                await h.sync()
        assert await documents(h) == sorted(OBJECTS)


@pytest.mark.parametrize("how", ["hangs", "drips its headers", "drips its body"])
async def test_a_listing_that_hangs_or_drips_is_given_up_within_the_timeout(tmp_path, server, how) -> None:
    """A byte every 0.5 s would pass any per-read timeout for ever; the listing has 1 s in all."""
    body = listing(OBJECTS)
    answers: dict[str, dict[str, float]] = {"hangs": {"stall": 60},
                                            "drips its headers": {"drip": 0.5, "drip_from": 5},
                                            "drips its body": {"drip": 0.5, "drip_from": 120}}
    answer = answers[how]
    server.plan(ok_rules())
    async with Harness.open(s3_config(tmp_path, server, timeout=1)) as h:
        assert (await h.sync()).total("added") == 3
        server.plan([{"match": "list-type=2", "body": body, "headers": XML, **answer}])
        started = time.monotonic()
        with pytest.raises(Timeout, match=r"cannot list s3://kb/: no whole answer within 1 s \(timeout\)"):
            await h.sync()
        took = time.monotonic() - started
        assert 0.9 < took < 5  # the timeout, with room for a loaded machine; no retry after it
        assert await documents(h) == sorted(OBJECTS)
        assert "no whole answer within 1 s" in await failing_reason(h)


async def test_gets_that_hang_keep_the_stored_copies_and_stop_being_tried(tmp_path, server) -> None:
    """40 changed objects whose GETs all hang: the first ones time out, the rest are not tried; the
    stored copies stay and nothing is deleted."""
    many = {f"doc{i:02d}.md": f"# Doc {i}\n\nThe zebu handbook, part {i}.\n" for i in range(40)}
    server.plan(ok_rules(many))
    async with Harness.open(s3_config(tmp_path, server, timeout=1)) as h:
        assert (await h.sync()).total("added") == 40
        edited = {key: body + "Edited.\n" for key, body in many.items()}
        server.plan([{"match": "list-type=2", "body": listing(edited), "headers": XML},
                     *objects_rules(edited, stall=60)])
        server.clear()
        started = time.monotonic()
        summary = (await h.sync()).sources[0]
        took = time.monotonic() - started
        gets = [line for line in server.requests() if line.startswith(f"GET /{BUCKET}/")]
        assert (summary.updated, summary.deleted, summary.skipped_reasons) == (0, 0, {"error": 40})
        assert len(gets) <= 8 + 3  # the read-ahead's 8 at once, and what started before 3 had timed out
        assert took < 15  # 40 hung GETs tried one by one would take 40 s
        found = await h.search(SearchRequest(query="zebu handbook", mode="keyword", limit=50))
        assert len(found.results) == 40


async def test_a_get_that_drips_is_cut_at_the_timeout_and_not_stored(tmp_path, server) -> None:
    server.plan(ok_rules())
    async with Harness.open(s3_config(tmp_path, server, timeout=1)) as h:
        assert (await h.sync()).total("added") == 3
        edited = {**OBJECTS, "alpha.md": "# Alpha\n\nThe alpha handbook now speaks of the okapi.\n"}
        server.plan([{"match": "list-type=2", "body": listing(edited), "headers": XML},
                     *objects_rules({"alpha.md": edited["alpha.md"]}, drip=0.5, drip_from=80)])
        started = time.monotonic()
        summary = (await h.sync()).sources[0]
        assert time.monotonic() - started < 5
        assert (summary.updated, summary.skipped_reasons) == (0, {"error": 1})
        assert [i.source_id for i in summary.skipped_items] == ["alpha.md"]
        okapi = await h.search(SearchRequest(query="okapi", mode="keyword"))
        assert okapi.results == []  # no half-read body was stored
        assert await documents(h) == sorted(OBJECTS)


S3_NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
EMPTY = f"<Name>{BUCKET}</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
FOREIGN_LISTINGS = {  # issue 55: each one parses as an empty listing; each emptied the source (3 documents -> 0)
    "no namespace, empty": (f"<ListBucketResult>{EMPTY}</ListBucketResult>", "it is in no XML namespace"),
    "another namespace, empty": (f'<ListBucketResult xmlns="http://evil.example/doc/">{EMPTY}</ListBucketResult>',
                                 "its namespace is 'http://evil.example/doc/'"),
    "a prefixed namespace, empty": (f'<s:ListBucketResult xmlns:s="urn:other">{EMPTY.replace("<", "<s:").replace("<s:/", "</s:")}'
                                    "</s:ListBucketResult>", "its namespace is 'urn:other'"),
    "children of another namespace": (f'<ListBucketResult {S3_NS}><x:Name xmlns:x="urn:x">{BUCKET}</x:Name>'
                                      "<KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>",
                                      "<Name> is in the namespace 'urn:x'"),
    "no bucket name": (f"<ListBucketResult {S3_NS}><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>"
                       "</ListBucketResult>", "it does not name its bucket"),
}


@pytest.mark.parametrize("case", list(FOREIGN_LISTINGS))
async def test_an_empty_listing_of_another_namespace_or_shape_deletes_nothing(tmp_path, server, case) -> None:
    body, says = FOREIGN_LISTINGS[case]
    server.plan(ok_rules())
    async with Harness.open(s3_config(tmp_path, server)) as h:
        assert (await h.sync()).total("added") == 3
        server.plan([{"match": "list-type=2", "body": '<?xml version="1.0" encoding="UTF-8"?>\n' + body,
                      "headers": XML}])
        with pytest.raises(NotConfigured) as caught:
            await h.sync()
        message = str(caught.value)
        assert message.startswith("s3:kb: cannot list s3://kb/: the answer is not a valid S3 listing"), message
        assert says in message and "documents of earlier syncs are kept" in message, message
        assert await documents(h) == sorted(OBJECTS)
        assert says in await failing_reason(h)


async def test_an_empty_bucket_in_s3s_namespace_and_googles_still_empties_the_source(tmp_path, server) -> None:
    """A real empty listing (S3's namespace, or the one Google Cloud Storage's XML API writes) is an
    empty bucket: the documents of the removed objects go."""
    for n, namespace in enumerate(("http://s3.amazonaws.com/doc/2006-03-01/", "http://doc.s3.amazonaws.com/2006-03-01")):
        server.plan(ok_rules())
        (tmp_path / str(n)).mkdir()
        async with Harness.open(s3_config(tmp_path / str(n), server)) as h:
            assert (await h.sync()).total("added") == 3
            server.plan([{"match": "list-type=2", "headers": XML,
                          "body": f'<ListBucketResult xmlns="{namespace}">{EMPTY}</ListBucketResult>'}])
            assert (await h.sync()).total("deleted") == 3
            assert await documents(h) == []
