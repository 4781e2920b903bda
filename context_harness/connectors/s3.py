"""The S3 connector: objects of a bucket (AWS, or an S3-compatible service such as MinIO, R2, B2,
LocalStack), read like the files of a folder: the same globs, limits, skips and document pipeline.

Each sync lists the bucket (under ``prefix``, a page of 1,000 keys at a time) and fingerprints each
object by its ETag, size and LastModified: the sync fetches (GET) only objects whose fingerprint
changed, so a sync of an unchanged bucket downloads nothing, and drops the documents of keys no
longer listed. ``source_id`` is the key relative to ``prefix``; ``source_url`` is ``s3://bucket/key``.

The client is boto3 (the extra ``context-harness[s3]``): it reads the whole AWS credential chain
(environment, ``~/.aws`` files and profiles, SSO, instance roles). The credentials in use are handed
to ``redaction`` before the first request, so no log line or error can show them.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from context_harness import redaction
from context_harness.config import S3ConnectorConfig
from context_harness.connectors.base import Candidate, ScanReport, SourceItem
from context_harness.connectors.filesystem import DOCUMENT_COST, Globs, decode_text, text_item
from context_harness.connectors.read_ahead import ReadAhead
from context_harness.connectors.reading import Skip
from context_harness.errors import NotConfigured
from context_harness.formats import documents
from context_harness.formats.documents import EXTRA_HINT, DocumentFormat, document_format

log = logging.getLogger(__name__)
INSTALL_HINT = "pip install 'context-harness[s3]'"
PAGE_SIZE = 1000  # keys per listing request (the most S3 returns)
GONE_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
DENIED_CODES = frozenset({"AccessDenied", "403", "Forbidden", "AllAccessDisabled"})


class S3Error(RuntimeError):
    """An object could not be fetched for a reason that may pass (the sync keeps its stored copy)."""


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
        options = BotoConfig(retries={"max_attempts": 4, "mode": "standard"}, connect_timeout=10, read_timeout=60,
                             s3={"addressing_style": "path"} if cfg.endpoint_url else None,
                             user_agent_extra="context-harness")
        self._client = session.client("s3", endpoint_url=cfg.endpoint_url, config=options,
                                      region_name=cfg.region or session.region_name or "us-east-1")
        return self._client

    def _remember_credentials(self) -> None:
        """Hide the credentials in use from every log line and error (again on each scan: a role's
        or SSO profile's credentials are renewed)."""
        frozen = self._credentials.get_frozen_credentials()
        redaction.REDACTOR.add([v for v in (frozen.access_key, frozen.secret_key, frozen.token) if v])

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        """Every object under the prefix, a page at a time. A listing that fails on its first page (no
        such bucket, access denied, no connection) fails the sync and keeps the stored documents;
        one that fails later keeps what was listed (the sync deletes nothing then)."""
        client = self.client()
        self._remember_credentials()
        self._read_ahead.stop()
        self._convertible = {}
        pages = iter(client.get_paginator("list_objects_v2").paginate(
            Bucket=self.config.bucket, Prefix=self.prefix, PaginationConfig={"PageSize": PAGE_SIZE}))
        first = True
        while True:
            try:
                page = next(pages, None)
            except Exception as exc:
                if first:
                    raise self._listing_error(exc) from None
                code, message = _problem(exc)
                raise S3Error(f"listing {self.where} failed part-way: {code}: {message}") from None
            if page is None:
                return
            first = False
            for obj in page.get("Contents") or ():
                candidate = self._candidate(obj, report)
                if candidate is not None:
                    yield candidate

    def _listing_error(self, exc: Exception) -> NotConfigured:
        code, message = _problem(exc)
        if code == "NoSuchBucket":
            fix = f"bucket {self.config.bucket!r} does not exist (deleted, or a typo in bucket)"
        elif code in DENIED_CODES:
            fix = "access denied: the credentials need s3:ListBucket and s3:GetObject on it"
        elif code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"):
            fix = f"the credentials were refused ({code}): check or renew them"
        else:
            fix = f"{code}: {message}"
        return NotConfigured(f"{self.label}: cannot list {self.where}: {fix}; the documents of earlier syncs are "
                             "kept")

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
        """GET of one object (in a read-ahead thread, or the sync's): its bytes, or why it is skipped."""
        limit = self.config.max_file_size
        try:
            response = self.client().get_object(Bucket=self.config.bucket, Key=self.prefix + rel)
            body = response["Body"]
            try:
                raw = body.read(limit + 1)
            finally:
                body.close()
        except Exception as exc:
            code, message = _problem(exc)
            if code in GONE_CODES:
                return Skip("vanished", f"{rel} (gone since it was listed)")
            if code in DENIED_CODES:
                return Skip("unreadable", f"{rel} (access denied)")
            raise S3Error(f"GET {self.where}{rel} failed: {code}: {message}") from None
        if len(raw) > limit:
            return Skip("too_large", f"{rel} (over {limit} bytes when read)")
        return bytes(raw)

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
