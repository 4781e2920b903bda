"""Failures remembered (issue 41), against a real S3-compatible server on 127.0.0.1 (moto) and the
real ``ctx`` in subprocesses: after a failed listing ``ctx sources`` (another process, serving
nothing) says ``failing`` and why, until a sync works again; a source set aside for an unset
variable makes ``ctx sync`` exit 1 naming it; objects skipped when read for what they hold are not
downloaded again while unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from support.cli import run_ctx
from support.s3 import found, put, s3_table, write_config

pytestmark = pytest.mark.anyio
UNSET = "CTX_TEST_S3_NEVER_SET"


def sources_line(cwd: Path) -> str:
    listed = run_ctx("sources", cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    return next(line for line in listed.stdout.splitlines() if line.startswith("s3:kb:"))


@pytest.mark.slow  # four `ctx` subprocesses
def test_ctx_sources_tells_a_failed_listing_until_a_sync_works(tmp_path, server, bucket, creds) -> None:
    put(server, bucket, {"a.md": "# A\n\nThe narwhal handbook.\n"})
    write_config(tmp_path, server, bucket)
    assert run_ctx("sync", cwd=tmp_path).returncode == 0
    assert ", ok, last sync" in sources_line(tmp_path)

    client = server.client()
    client.delete_object(Bucket=bucket, Key="a.md")
    client.delete_bucket(Bucket=bucket)
    failed = run_ctx("sync", cwd=tmp_path)
    assert failed.returncode == 1 and "does not exist" in failed.stderr
    line = sources_line(tmp_path)  # was: "1 documents, 1 chunks, ok" (only a serving process knew)
    assert ", failing (the last sync failed (" in line and f"bucket '{bucket}' does not exist" in line
    listed = json.loads(run_ctx("sources", "--json", cwd=tmp_path).stdout)["sources"][0]
    assert (listed["status"], listed["healthy"], listed["document_count"]) == ("failing", False, 1)

    client.create_bucket(Bucket=bucket)
    assert run_ctx("sync", cwd=tmp_path).returncode == 0
    assert ", ok, last sync" in sources_line(tmp_path)


@pytest.mark.slow  # two `ctx sync` subprocesses
def test_a_source_set_aside_for_an_unset_variable_fails_ctx_sync_naming_it(tmp_path, server, bucket, creds,
                                                                         monkeypatch) -> None:
    monkeypatch.delenv(UNSET, raising=False)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "n.md").write_text("# Note\n\nA local note.\n", encoding="utf-8")
    table = s3_table(server, bucket).replace("${S3T_SECRET}", f"${{{UNSET}}}")
    (tmp_path / "ctx.toml").write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n'
                                       '[connectors.filesystem.docs]\nroot = "docs"\n' + table, encoding="utf-8")
    done = run_ctx("sync", cwd=tmp_path)  # was: exit 0, the bucket passed by without a word
    assert done.returncode == 1
    assert "filesystem:docs: 1 added" in done.stdout  # the other source still synced
    assert done.stderr.strip() == (f"error: s3:kb was not synced: environment variable {UNSET} not set (needed by "
                                   f"[connectors.s3.kb]); set it and restart, or write ${{{UNSET}:-default}}")
    as_json = run_ctx("sync", "--json", cwd=tmp_path)
    assert as_json.returncode == 1
    assert list(json.loads(as_json.stdout)["set_aside"]) == ["s3:kb"]
    assert json.loads(as_json.stderr)["error"]["code"] == "not_configured"


async def test_objects_skipped_when_read_are_not_fetched_again_while_unchanged(tmp_path, server, bucket,
                                                                              creds) -> None:
    put(server, bucket, {"good.md": "# Good\n\nAbout the okapi.\n", "bad.md": b"\x00binary inside",
                         "pic.md": b"\x89PNG\r\n\x1a\n\x00\x00"})
    path = write_config(tmp_path, server, bucket)
    async with Harness.open(config_mod.load_file(path)) as h:
        first = (await h.sync()).sources[0]
        assert (first.added, first.skipped_reasons, server.log.object_gets(bucket)) == (1, {"binary": 2}, 3)

        server.log.clear()
        again = (await h.sync()).sources[0]  # was: both binary objects downloaded again on every sync
        assert (again.unchanged, again.skipped_reasons, server.log.object_gets(bucket)) == (1, {"binary": 2}, 0)
        assert {(i.source_id, i.reason) for i in again.skipped_items} == {("bad.md", "binary"), ("pic.md", "binary")}
        source = (await h.sources()).sources[0]
        assert source.notes is not None and "binary 2" in source.notes

        put(server, bucket, {"bad.md": "# Fixed\n\nNow text about the okapi.\n"})  # a new ETag: read again
        server.log.clear()
        third = (await h.sync()).sources[0]
        assert (third.added, third.skipped_reasons, server.log.object_gets(bucket)) == (1, {"binary": 1}, 1)
        assert sorted(await found(h, "okapi")) == ["bad.md", "good.md"]

        server.log.clear()
        full = (await h.sync(full=True)).sources[0]  # --full reads everything again
        assert (full.skipped_reasons, server.log.object_gets(bucket)) == ({"binary": 1}, 3)

    path.write_text(path.read_text(encoding="utf-8") + "max_file_size = 500000\n", encoding="utf-8")
    async with Harness.open(config_mod.load_file(path)) as h:
        server.log.clear()
        changed = (await h.sync()).sources[0]  # other settings: the skipped object is read again, once
        assert (changed.skipped_reasons, server.log.object_gets(bucket)) == ({"binary": 1}, 1)


def test_sync_all_names_what_it_passed_by_but_not_a_registry_connector_switched_off() -> None:
    from context_harness.config import Unavailable
    from context_harness.connectors.unavailable import UnavailableConnector
    from context_harness.ingest.sync import passed_by

    missing = Unavailable(kind="connector", name="s3:kb", key_path="connectors.s3.kb", variables=[UNSET])
    off = Unavailable(kind="connector", name="script:feed", key_path="connectors.script.feed", variables=[],
                      error="off: asks for http hosts example.org")
    connectors = [UnavailableConnector("s3", "kb", missing.message), UnavailableConnector("script", "feed", off.message)]
    assert passed_by("all", connectors, [missing, off]) == {"s3:kb": missing.message}
    assert passed_by("s3:kb", connectors, [missing, off]) == {}  # a named target fails on its own
