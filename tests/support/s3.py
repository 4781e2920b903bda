"""A real S3-compatible server on 127.0.0.1 (moto's server mode) for the S3 connector's tests, and
the requests it answered (from its access log), so a test can count the GETs a sync made."""

from __future__ import annotations

import logging
import re
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ACCESS_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/')


class RequestLog(logging.Handler):
    """Every request line the server logged: ``(method, path)``."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[str, str]] = []
        self._lock_lines = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        match = ACCESS_LINE.search(record.getMessage())
        if match:
            with self._lock_lines:
                self.lines.append((match["method"], match["path"]))

    def object_gets(self, bucket: str) -> int:
        """GETs of objects of ``bucket`` (path style ``/bucket/key``; a listing is ``/bucket?...``)."""
        with self._lock_lines:
            return sum(1 for method, path in self.lines if method == "GET" and path.startswith(f"/{bucket}/"))

    def clear(self) -> None:
        with self._lock_lines:
            self.lines.clear()


@dataclass
class S3Server:
    url: str
    log: RequestLog

    def client(self, key: str = "test-key-id", secret: str = "test-secret-value") -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.url, aws_access_key_id=key, aws_secret_access_key=secret,
                            region_name="us-east-1")

    def fill(self, bucket: str, objects: dict[str, bytes]) -> None:
        """Store many objects at once in the server's own store (10,000 PUTs over HTTP take 40 s on
        2 cores); what the connector lists and GETs afterwards still goes over HTTP."""
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        for key, body in objects.items():
            backend.put_object(bucket, key, body)


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """moto's threaded server on a free port of 127.0.0.1, its access log counted."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    log = RequestLog()
    werkzeug = logging.getLogger("werkzeug")
    werkzeug.addHandler(log)
    level = werkzeug.level
    werkzeug.setLevel(logging.INFO)
    try:
        host, port = server.get_host_and_port()
        yield S3Server(f"http://{host}:{port}", log)
    finally:
        werkzeug.removeHandler(log)
        werkzeug.setLevel(level)
        server.stop()


KEY_ID = "AKIAS3TESTKEY9X7Q"
SECRET = "s3-secret-Zq81wP4mVt6"


def s3_table(server: S3Server, bucket: str, extra: str = "") -> str:
    """``[connectors.s3.kb]`` for ``bucket``, its keys read from ``S3T_KEY_ID``/``S3T_SECRET``."""
    return textwrap.dedent(f"""
        [connectors.s3.kb]
        bucket = "{bucket}"
        endpoint_url = "{server.url}"
        region = "us-east-1"
        access_key_id = "${{S3T_KEY_ID}}"
        secret_access_key = "${{S3T_SECRET}}"
        """) + extra


def write_config(root: Path, server: S3Server, bucket: str, extra: str = "") -> Path:
    path = root / "ctx.toml"
    path.write_text('[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "disabled"\n'
                    + s3_table(server, bucket, extra), encoding="utf-8")
    return path


def put(server: S3Server, bucket: str, objects: dict[str, str | bytes]) -> None:
    client = server.client()
    for key, body in objects.items():
        client.put_object(Bucket=bucket, Key=key, Body=body.encode() if isinstance(body, str) else body)


async def found(harness: Any, query: str) -> list[str]:
    """The source ids a keyword search for ``query`` finds."""
    from context_harness.models import SearchRequest

    return [r.source_id for r in (await harness.search(SearchRequest(query=query, mode="keyword"))).results]
