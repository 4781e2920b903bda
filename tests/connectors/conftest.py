"""Fixtures of the S3 connector's tests: one moto server a test module (on 127.0.0.1), a fresh bucket
a test, and the credential variables the configs name (``support.s3.s3_table``)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from support.s3 import KEY_ID, SECRET, S3Server, s3_server

_buckets = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    with s3_server() as running:
        yield running


@pytest.fixture
def bucket(server: S3Server) -> str:
    name = f"kb-{os.getpid()}-{next(_buckets)}"
    server.client().create_bucket(Bucket=name)
    server.log.clear()
    return name


@pytest.fixture
def creds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3T_KEY_ID", KEY_ID)
    monkeypatch.setenv("S3T_SECRET", SECRET)
