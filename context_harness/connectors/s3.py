"""The S3 connector: objects of a bucket (AWS, or an S3-compatible service such as MinIO, R2, B2,
LocalStack), read like the files of a folder: the same globs, limits, skips and document pipeline.

Each sync lists the bucket (under ``prefix``, a page of 1,000 keys at a time) and fingerprints each
object by its ETag, size and LastModified: the sync fetches (GET) only objects whose fingerprint
changed, so a sync of an unchanged bucket downloads nothing, and drops the documents of keys no
longer listed. ``source_id`` is the key relative to ``prefix``; ``source_url`` is ``s3://bucket/key``.

The client is boto3 (the extra ``context-harness[s3]``): it reads the whole AWS credential chain
(environment, ``~/.aws`` files and profiles, SSO, instance roles). The credentials in use are handed
to ``redaction`` before the first request, so no log line or error can show them.

A remote end is not trusted to behave:

- Every request (a listing page; an object GET with its body) has ``timeout`` seconds in all,
  retries included (``deadline.Deadline``: its sockets are shut down when the time is up, so a
  server that hangs or drips a byte at a time cannot hold the sync); connecting gets
  ``CONNECT_SECONDS`` an attempt; a retry is made only when its backoff fits in the time left.
- A listing page must be one: an XML ``ListBucketResult`` (not an HTML page answered with 200) in
  S3's namespace (``LISTING_NAMESPACES``, every element of it), naming the bucket, whose keys are all
  there (``KeyCount``), and a truncated one must say where to go on. Anything else fails the listing,
  and a failed listing deletes nothing (``ingest/sync.py``): an empty listing of another namespace is
  not an empty bucket.
- After ``STALLED_GETS`` GETs of one sync have timed out, the rest are not tried: the endpoint is
  given up for that sync (their stored copies stay; the next sync tries again).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import PurePosixPath
from typing import Any

from context_harness.common import redaction
from context_harness.common.deadline import Deadline
from context_harness.config import S3ConnectorConfig
from context_harness.config.install import InstallHint
from context_harness.connectors.base import Candidate, ScanReport, SourceItem
from context_harness.connectors.filesystem import DOCUMENT_COST, Globs, decode_text, text_item
from context_harness.connectors.read_ahead import ReadAhead
from context_harness.connectors.reading import Skip
from context_harness.errors import NotConfigured, Timeout
from context_harness.formats import documents
from context_harness.formats.documents import EXTRA_HINT, DocumentFormat, document_format

log = logging.getLogger(__name__)
INSTALL_HINT = InstallHint("s3")  # the command for this install (a checkout, a git URL, uv, pipx)
PAGE_SIZE = 1000  # keys per listing request (the most S3 returns)
ATTEMPTS = 4  # tries of one request, within its timeout
CONNECT_SECONDS = 10.0  # to connect, per attempt (never past the request's timeout)
STALLED_GETS = 3  # GETs timed out in one sync before the rest are not tried
LISTING_ROOT = "ListBucketResult"
# The namespaces a listing is written in: S3's own (AWS, MinIO, R2, B2, Ceph, LocalStack) and the one
# Google Cloud Storage's XML API writes. Another one, or none, is not an S3 listing, even if it parses.
S3_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
LISTING_NAMESPACES = frozenset({S3_NAMESPACE, "http://doc.s3.amazonaws.com/2006-03-01"})
GONE_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
DENIED_CODES = frozenset({"AccessDenied", "403", "Forbidden", "AllAccessDisabled"})


class S3Error(RuntimeError):
    """An object could not be fetched for a reason that may pass (the sync keeps its stored copy)."""


class InvalidListing(S3Error):
    """The endpoint answered a listing request with something that is not a listing."""


# What this thread's S3 request is: its ``deadline`` (a Deadline) and the ``status`` of its last answer.
_running = threading.local()


def client_missing() -> str | None:
    """Why the S3 client cannot be used (the extra is not installed), or None when it can."""
    try:
        import boto3  # noqa: F401
    except ImportError:
        return f"the S3 connector needs the s3 extra: {INSTALL_HINT}"
    return None


def _problem(exc: Exception) -> tuple[str, str]:
    """(code, message) of a botocore error: the service's error code, or the exception's class."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error") or {}
        code = str(error.get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode") or "")
        return code or type(exc).__name__, str(error.get("Message") or exc)
    return type(exc).__name__, str(exc)


class S3Connector:
    type = "s3"

    def __init__(self, name: str, config: S3ConnectorConfig) -> None:
        self.name = name
        self.config = config
        prefix = config.prefix.strip("/")
        self.prefix = prefix + "/" if prefix else ""
        self._globs = Globs(config.include_globs, config.exclude_globs)
        self._convertible: dict[str, bool] = {}
        self._client: Any = None
        self._credentials: Any = None
        self._read_ahead: ReadAhead[bytes | Skip] = ReadAhead(self._get)
        self._stalled = 0  # GETs of this sync that timed out (``STALLED_GETS``), counted from read-ahead threads
        self._stalled_lock = threading.Lock()

    @property
    def label(self) -> str:
        return f"{self.type}:{self.name}"

    @property
    def where(self) -> str:
        return f"s3://{self.config.bucket}/{self.prefix}"

    def health(self) -> tuple[bool, str | None]:
        missing = client_missing()
        return (False, missing) if missing else (True, None)

    def client(self) -> Any:
        """The boto3 client (made once); its credentials are secrets from now on (``redaction``)."""
        if self._client is not None:
            return self._client
        missing = client_missing()
        if missing:
            raise NotConfigured(f"{self.label}: {missing}")
        import boto3
        from botocore.config import Config as BotoConfig
        from botocore.exceptions import BotoCoreError

        cfg = self.config
        try:
            session = boto3.session.Session(
                aws_access_key_id=cfg.access_key_id, aws_secret_access_key=cfg.secret_access_key,
                aws_session_token=cfg.session_token, region_name=cfg.region, profile_name=cfg.profile)
            credentials = session.get_credentials()
        except BotoCoreError as exc:  # an unknown profile, a broken ~/.aws file
            raise NotConfigured(f"{self.label}: the AWS configuration cannot be used: {exc}") from None
        if credentials is None:
            raise NotConfigured(f"{self.label}: no AWS credentials found: set AWS_ACCESS_KEY_ID and "
                                "AWS_SECRET_ACCESS_KEY, a profile (AWS_PROFILE or profile = ...), or access_key_id "
                                'and secret_access_key = "${VAR}" in the config')
        self._credentials = credentials
        self._remember_credentials()
        options = BotoConfig(retries={"max_attempts": ATTEMPTS, "mode": "standard"},
                             connect_timeout=min(CONNECT_SECONDS, cfg.timeout), read_timeout=cfg.timeout,
                             s3={"addressing_style": "path"} if cfg.endpoint_url else None,
                             user_agent_extra="context-harness")
        client = session.client("s3", endpoint_url=cfg.endpoint_url, config=options,
                                region_name=cfg.region or session.region_name or "us-east-1")
        _watch_connections(client)
        client.meta.events.register_first("needs-retry.s3", _retry_in_time)
        client.meta.events.register("before-parse.s3.ListObjectsV2", _check_listing)
        self._client = client
        return client

    @contextmanager
    def _request(self) -> Iterator[Deadline]:
        """The time limit of one S3 request made in this thread (``timeout``, retries included)."""
        with Deadline(self.config.timeout) as deadline:
            _running.deadline, _running.status = deadline, None
            try:
                yield deadline
            finally:
                _running.deadline = _running.status = None

    def _remember_credentials(self) -> None:
        """Hide the credentials in use from every log line and error (again on each scan: a role's
        or SSO profile's credentials are renewed)."""
        frozen = self._credentials.get_frozen_credentials()
        redaction.REDACTOR.add([v for v in (frozen.access_key, frozen.secret_key, frozen.token) if v])

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        """Every object under the prefix, a page at a time. A listing that fails on its first page (no
        such bucket, access denied, no connection, no answer in time, an answer that is not a listing)
        fails the sync and keeps the stored documents; one that fails later keeps what was listed
        (the sync deletes nothing then)."""
        client = self.client()
        self._remember_credentials()
        self._read_ahead.stop()
        self._convertible = {}
        self._stalled = 0
        pages = iter(client.get_paginator("list_objects_v2").paginate(
            Bucket=self.config.bucket, Prefix=self.prefix, PaginationConfig={"PageSize": PAGE_SIZE}))
        first = True
        while True:
            with self._request() as deadline:
                try:
                    page = next(pages, None)
                    if page is not None:
                        self._check_page(page)
                except Exception as exc:
                    raise self._listing_error(exc, deadline, first) from None
            if page is None:
                return
            first = False
            for obj in page["Contents"]:
                candidate = self._candidate(obj, report)
                if candidate is not None:
                    yield candidate

    def _check_page(self, page: dict[str, Any]) -> None:
        """``InvalidListing`` unless ``page`` is a whole listing page of this bucket (its ``Contents``
        then a list, maybe empty)."""
        contents = page.get("Contents") or []
        what = None
        if page.get("Name") is None:
            what = "it does not name its bucket (Name)"
        elif page.get("Name") != self.config.bucket:
            what = f"it lists bucket {page.get('Name')!r}"
        elif not isinstance(page.get("IsTruncated"), bool):
            what = "it does not say whether it is complete (IsTruncated)"
        elif page["IsTruncated"] and not page.get("NextContinuationToken"):
            what = "it is truncated but gives no continuation token"
        elif not all(isinstance(obj, dict) and isinstance(obj.get("Key"), str) and obj["Key"] for obj in contents):
            what = "an entry of its Contents has no Key"
        elif isinstance(page.get("KeyCount"), int) and page["KeyCount"] != len(contents) + len(
                page.get("CommonPrefixes") or []):
            what = f"it counts {page['KeyCount']} keys but holds {len(contents)}"
        if what is not None:
            raise InvalidListing(f"the answer is not a valid S3 listing: {what}")
        page["Contents"] = contents

    def _listing_error(self, exc: Exception, deadline: Deadline, first: bool) -> Exception:
        """What a failed listing request raises: ``Timeout`` when it ran out of time, else
        ``NotConfigured``. On a first page nothing is listed and the sync fails; later, the sync keeps
        what was listed and deletes nothing (or fails the same way when nothing of it was kept)."""
        code, message = _problem(exc)
        if deadline.expired:
            fix = (f"no whole answer within {self.config.timeout:g} s (timeout): the endpoint hangs or answers "
                   "too slowly")
        elif isinstance(exc, InvalidListing):
            fix = f"{exc}; check endpoint_url"
        elif code == "ResponseParserError":
            fix = "the answer is not a valid S3 listing (its XML does not parse); check endpoint_url"
        elif code == "NoSuchBucket":
            fix = f"bucket {self.config.bucket!r} does not exist (deleted, or a typo in bucket)"
        elif code in DENIED_CODES:
            fix = "access denied: the credentials need s3:ListBucket and s3:GetObject on it"
        elif code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"):
            fix = f"the credentials were refused ({code}): check or renew them"
        else:
            fix = f"{code}: {message}"
        what = f"cannot list {self.where}" if first else f"listing {self.where} failed part-way"
        kind = Timeout if deadline.expired else NotConfigured
        return kind(f"{self.label}: {what}: {fix}; the documents of earlier syncs are kept")

    def _candidate(self, obj: dict[str, Any], report: ScanReport) -> Candidate | None:
        key = str(obj["Key"])
        rel = key[len(self.prefix):]
        if not rel or rel.endswith("/") or not self._globs.wanted(rel):
            return None  # a folder marker, or a key the globs leave out
        size = int(obj.get("Size") or 0)
        if size > self.config.max_file_size:
            report.skip("too_large", f"{rel} ({size} bytes > max_file_size)", item=rel)
            return None
        fmt = document_format(PurePosixPath(rel).suffix)
        if fmt is not None and not self._can_convert(fmt):
            report.skip("needs_documents_extra", f"{rel} (a {fmt.name} file; {EXTRA_HINT})", item=rel)
            return None
        modified = obj.get("LastModified")
        modified = modified if isinstance(modified, dt.datetime) else None
        fingerprint = f"{str(obj.get('ETag') or '').strip(chr(34))}:{size}:{modified.isoformat() if modified else ''}"
        if fmt is None:
            return Candidate(rel, fingerprint, lambda: self._text(key, rel, modified, report))
        return Candidate(rel, f"{fingerprint}:c{documents.CONVERTER_VERSION}",
                         lambda: self._document(key, rel, modified, fmt, report), cost=DOCUMENT_COST + size // 65_536)

    def _can_convert(self, fmt: DocumentFormat) -> bool:
        if fmt.name not in self._convertible:
            self._convertible[fmt.name] = documents.available(fmt)
            if not self._convertible[fmt.name]:
                log.warning("%s: %s objects are skipped: converting them needs the documents extra (%s)",
                            self.label, fmt.name, EXTRA_HINT)
        return self._convertible[fmt.name]

    def prefetch(self, source_ids: list[str]) -> None:
        """The objects the sync will load, in order: fetched ahead, a few at once (``ReadAhead``)."""
        self._read_ahead.announce(source_ids)

    def fetch(self, rel: str, report: ScanReport) -> bytes | None:
        """The bytes of the object ``rel`` (below the prefix; never more than ``max_file_size``), or
        None: a named skip (``vanished`` since it was listed, ``unreadable``: access denied,
        ``too_large`` when read). Any other failure raises ``S3Error``: the sync names it (``error``)
        and keeps the stored copy for the next sync."""
        got = self._read_ahead.take(rel)
        if isinstance(got, Skip):
            report.skip(got.reason, str(got), item=rel)
            return None
        return got

    def _get(self, rel: str) -> bytes | Skip:
        """GET of one object (in a read-ahead thread, or the sync's): its bytes, or why it is skipped.
        Raises ``S3Error`` for a failure that may pass: the sync keeps the stored copy."""
        limit = self.config.max_file_size
        if self._stalled >= STALLED_GETS:
            raise S3Error(f"GET {self.where}{rel} not tried: {STALLED_GETS} GETs of this sync took over "
                          f"{self.config.timeout:g} s (timeout); the next sync tries again")
        with self._request() as deadline:
            try:
                response = self.client().get_object(Bucket=self.config.bucket, Key=self.prefix + rel)
                body = response["Body"]
                try:
                    raw = body.read(limit + 1)
                finally:
                    body.close()
            except Exception as exc:
                if deadline.expired:
                    raise self._timed_out(rel) from None
                code, message = _problem(exc)
                if code in GONE_CODES:
                    return Skip("vanished", f"{rel} (gone since it was listed)")
                if code in DENIED_CODES:
                    return Skip("unreadable", f"{rel} (access denied)")
                raise S3Error(f"GET {self.where}{rel} failed: {code}: {message}") from None
            if deadline.expired:  # the socket was shut down mid-body: what was read is cut short
                raise self._timed_out(rel)
        if len(raw) > limit:
            return Skip("too_large", f"{rel} (over {limit} bytes when read)")
        length = response.get("ContentLength")
        if isinstance(length, int) and length != len(raw):
            raise S3Error(f"GET {self.where}{rel}: {len(raw)} of {length} bytes arrived; the next sync tries again")
        return bytes(raw)

    def _timed_out(self, rel: str) -> S3Error:
        with self._stalled_lock:
            self._stalled += 1
        return S3Error(f"GET {self.where}{rel} took over {self.config.timeout:g} s (timeout); the next sync tries "
                       "again")

    def _text(self, key: str, rel: str, modified: dt.datetime | None, report: ScanReport) -> SourceItem | None:
        raw = self.fetch(rel, report)
        text = None if raw is None else decode_text(raw, rel, rel, report)
        if text is None:
            return None
        return text_item(rel, text, modified or dt.datetime.now(dt.UTC), self._url(key))

    def _document(self, key: str, rel: str, modified: dt.datetime | None, fmt: DocumentFormat,
                  report: ScanReport) -> SourceItem | None:
        """A PDF, DOCX or HTML object as raw bytes: the sync converts it (see ``formats/documents.py``)."""
        raw = self.fetch(rel, report)
        if raw is None:
            return None
        return SourceItem(source_id=rel, body="", title=PurePosixPath(rel).stem, source_url=self._url(key),
                          content_type=fmt.content_type, updated_at=modified, raw=raw)

    def _url(self, key: str) -> str:
        return f"s3://{self.config.bucket}/{key}"


def _retry_in_time(attempts: int, **kwargs: Any) -> bool | None:
    """``needs-retry`` (before botocore's own handler): no retry once the request's deadline has
    passed, or when the longest backoff before the next attempt (2^(attempts-1) s) would not fit
    in the time left; None lets botocore decide."""
    deadline: Deadline | None = getattr(_running, "deadline", None)
    if deadline is not None and (deadline.expired or deadline.remaining() < 2 ** (attempts - 1)):
        return False
    return None


def _check_listing(response_dict: dict[str, Any], **kwargs: Any) -> None:
    """``before-parse`` of a listing: ``InvalidListing`` unless a successful answer is XML whose root is
    a ``ListBucketResult`` (an HTML login page answered with 200 is not an empty bucket), or S3's
    ``Error`` (botocore retries that one as a 500)."""
    status = getattr(_running, "status", None) or response_dict.get("status_code")
    if int(status or 0) >= 300:
        return  # an error answer: botocore reads its code
    content_type = str((response_dict.get("headers") or {}).get("content-type") or "")
    if content_type and "xml" not in content_type.lower():
        raise InvalidListing(f"the answer is not a valid S3 listing: its Content-Type is {content_type[:80]!r}")
    body = response_dict.get("body")
    try:
        root = ET.fromstring(body) if isinstance(body, bytes) and body.strip() else None
    except ET.ParseError:
        raise InvalidListing("the answer is not a valid S3 listing: its XML does not parse (cut short?)") from None
    tag = root.tag.rsplit("}", 1)[-1] if root is not None else None
    if tag not in (LISTING_ROOT, "Error"):
        raise InvalidListing("the answer is not a valid S3 listing: "
                             + (f"its root element is <{tag[:40]}>" if tag else "its body is empty"))
    if root is not None and tag == LISTING_ROOT:
        _check_namespace(root)


def _check_namespace(root: ET.Element) -> None:
    """``InvalidListing`` unless the listing and every element in it are in one of S3's namespaces
    (botocore reads tags without their namespace, so a foreign document would parse as a listing)."""
    namespace = root.tag[1:].split("}", 1)[0] if root.tag.startswith("{") else None
    if namespace not in LISTING_NAMESPACES:
        raise InvalidListing("the answer is not a valid S3 listing: " + (
            f"its namespace is {namespace[:80]!r}" if namespace else "it is in no XML namespace")
            + f", not S3's ({S3_NAMESPACE})")
    for element in root.iter():
        if not isinstance(element.tag, str) or not element.tag.startswith(f"{{{namespace}}}"):
            name = str(element.tag).rsplit("}", 1)[-1][:40]
            inner = str(element.tag)[1:].split("}", 1)[0] if str(element.tag).startswith("{") else ""
            raise InvalidListing(f"the answer is not a valid S3 listing: its <{name}> is in "
                                 + (f"the namespace {inner[:80]!r}" if inner else "no namespace"))


def _watch_connections(client: Any) -> None:
    """Make the client's connections put their sockets under the deadline of the request being made
    in the thread using them (``_running``). botocore has no public hook for its connection class:
    this replaces the pool classes its HTTP session uses (for proxies too), a dict it shares."""
    try:
        classes = client._endpoint.http_session._pool_classes_by_scheme
    except AttributeError:  # a botocore laid out otherwise: each read still has its timeout
        log.warning("S3: this botocore version gives no way to enforce the total timeout of a request; "
                    "each read still times out after timeout seconds")
        return
    classes.update(_watched_pools())


@cache
def _watched_pools() -> dict[str, type]:
    from botocore.awsrequest import (
        AWSHTTPConnection,
        AWSHTTPConnectionPool,
        AWSHTTPSConnection,
        AWSHTTPSConnectionPool,
    )

    class WatchedHTTPConnection(AWSHTTPConnection):
        def _new_conn(self) -> Any:
            return _watched(self, super()._new_conn)

        def request(self, *args: Any, **kwargs: Any) -> Any:
            _watch(self.sock)  # a connection kept from an earlier request
            return super().request(*args, **kwargs)

        def getresponse(self, *args: Any, **kwargs: Any) -> Any:
            return _status_seen(super().getresponse(*args, **kwargs))

    class WatchedHTTPSConnection(AWSHTTPSConnection):
        def _new_conn(self) -> Any:
            return _watched(self, super()._new_conn)

        def request(self, *args: Any, **kwargs: Any) -> Any:
            _watch(self.sock)
            return super().request(*args, **kwargs)

        def getresponse(self, *args: Any, **kwargs: Any) -> Any:
            return _status_seen(super().getresponse(*args, **kwargs))

    class WatchedHTTPConnectionPool(AWSHTTPConnectionPool):
        ConnectionCls = WatchedHTTPConnection

    class WatchedHTTPSConnectionPool(AWSHTTPSConnectionPool):
        ConnectionCls = WatchedHTTPSConnection

    return {"http": WatchedHTTPConnectionPool, "https": WatchedHTTPSConnectionPool}


def _watched(connection: Any, connect: Any) -> Any:
    """A new socket of ``connection``: connecting within what is left of the request's time, then
    watched by its deadline (before a TLS handshake, which it bounds too)."""
    deadline: Deadline | None = getattr(_running, "deadline", None)
    if deadline is not None and isinstance(connection.timeout, (int, float)):
        connection.timeout = deadline.connect_timeout(connection.timeout)
    sock = connect()
    _watch(sock)
    return sock


def _status_seen(response: Any) -> Any:
    """Note the HTTP status as it arrived (botocore turns a 200 whose XML does not parse into a 500
    before ``_check_listing`` sees it)."""
    _running.status = getattr(response, "status", None)
    return response


def _watch(sock: Any) -> None:
    deadline: Deadline | None = getattr(_running, "deadline", None)
    if deadline is not None and sock is not None:
        deadline.watch(sock)
