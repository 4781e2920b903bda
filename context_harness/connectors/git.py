"""The git connector: a real clone of a repository, refreshed with ``git fetch`` on every sync,
then read like a folder (same globs, skips and limits as the filesystem connector).

The checkout lives in the workspace (``<data>/git/NAME``); ``source_id`` is the path inside the
repository; ``source_url`` points at the file on the remote's web view when the URL is a GitHub or
GitLab style HTTPS URL, else at the local checkout.

Dates (full clones, ``shallow = false``): one ``git log`` pass per sync, made when the first changed
file is loaded, gives each file's ``created_at`` (the oldest commit that added it) and ``updated_at``
(the newest commit that added or changed it; front matter dates still win). A shallow clone has no
history to ask, so its files keep the file time and get ``created_at`` from their first sync.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

from context_harness import timestamps
from context_harness.config import FilesystemConnectorConfig, GitConnectorConfig
from context_harness.connectors.base import Candidate, ScanReport, SourceItem
from context_harness.connectors.filesystem import FilesystemConnector
from context_harness.connectors.names import escape_name

log = logging.getLogger(__name__)
GIT_TIMEOUT = 600
UPDATED_KEYS = ("updated", "updated_at", "modified")  # front matter dates that win over the history

Dates = dict[str, tuple[dt.datetime | None, dt.datetime]]
"""path in the repository -> (created: oldest commit adding it, updated: newest commit adding or changing it)."""


class GitError(RuntimeError):
    """git failed; the message says what to fix."""


def _git(args: list[str], cwd: Path | None = None) -> str:
    return run_git(args, cwd)


def run_git(args: list[str], cwd: Path | None = None, error: type[Exception] = GitError,
            timeout: float = GIT_TIMEOUT) -> str:
    """``git *args`` without a terminal prompt; its stdout, or ``error`` naming what failed."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, errors="surrogateescape",
                              timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise error("the `git` executable is not installed or not on PATH") from None
    except subprocess.TimeoutExpired:
        raise error(f"`git {args[0]}` took longer than {timeout:.0f} s") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise error(f"`git {args[0]}` failed: {detail[-1] if detail else 'exit code ' + str(done.returncode)}")
    return done.stdout.strip()


class GitConnector:
    type = "git"

    def __init__(self, name: str, config: GitConnectorConfig, checkout: Path) -> None:
        self.name = name
        self.config = config
        self.checkout = checkout
        self.commit: str | None = None

    @property
    def label(self) -> str:
        return f"{self.type}:{self.name}"

    def health(self) -> tuple[bool, str | None]:
        if not (self.checkout / ".git").is_dir():
            return True, "not cloned yet; `ctx sync` clones it"
        return True, None

    def update(self) -> str:
        """Clone or fetch, then check out the wanted branch; returns the commit id."""
        depth = ["--depth", "1"] if self.config.shallow else []
        if not (self.checkout / ".git").is_dir():
            if self.checkout.exists():
                shutil.rmtree(self.checkout)
            self.checkout.parent.mkdir(parents=True, exist_ok=True)
            branch = ["--branch", self.config.branch] if self.config.branch else []
            _git(["clone", "--quiet", *depth, *branch, self.config.url, str(self.checkout)])
        else:
            ref = self.config.branch or "HEAD"
            _git(["fetch", "--quiet", *depth, "origin", ref], cwd=self.checkout)
            _git(["reset", "--quiet", "--hard", "FETCH_HEAD"], cwd=self.checkout)
            _git(["clean", "-qfdx"], cwd=self.checkout)
        return _git(["rev-parse", "HEAD"], cwd=self.checkout)

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        try:
            self.commit = self.update()
        except GitError as exc:
            raise FileNotFoundError(f"cannot update {self.config.url}: {exc}") from None
        root = (self.checkout / self.config.root).resolve()
        if not str(root).startswith(str(self.checkout.resolve())):
            raise FileNotFoundError(f"root {self.config.root!r} leaves the repository")
        inner = FilesystemConnector(self.name, FilesystemConnectorConfig(
            root=root, include_globs=self.config.include_globs, exclude_globs=self.config.exclude_globs,
            max_file_size=self.config.max_file_size))
        web = _web_base(self.config.url, self.config.branch or self._branch())
        prefix = "" if self.config.root in ("", ".") else self.config.root.strip("/") + "/"
        checkout = self.checkout
        dates: Callable[[], Dates] = (lambda: {}) if self.config.shallow else cache(lambda: file_dates(checkout))
        for candidate in inner.scan(report):
            yield Candidate(candidate.source_id, candidate.fingerprint,
                            _with_url(candidate.load, web, prefix + candidate.source_id, dates))

    def _branch(self) -> str:
        try:
            return _git(["rev-parse", "--abbrev-ref", "HEAD"], cwd=self.checkout)
        except GitError:
            return "HEAD"


def _web_base(url: str, branch: str) -> str | None:
    match = re.match(r"^https://(github\.com|gitlab\.com)/([^/]+/[^/]+?)(?:\.git)?/?$", url)
    if not match:
        return None
    host, repo = match.groups()
    middle = "blob" if host == "github.com" else "-/blob"
    return f"https://{host}/{repo}/{middle}/{branch}/"


def file_dates(checkout: Path) -> Dates:
    """Every file's dates from one ``git log`` pass over the history (see ``Dates``); {} if git fails."""
    try:
        out = _git(["-c", "core.quotePath=false", "log", "--format=%x01%at", "--name-status", "--no-renames", "-z",
                    "HEAD"], cwd=checkout)
    except GitError as exc:
        log.warning("%s: no file dates from the history: %s", checkout.name, exc)
        return {}
    created: dict[str, dt.datetime] = {}
    updated: dict[str, dt.datetime] = {}
    for commit in out.split("\x01"):  # newest first
        fields = commit.split("\x00")
        if not fields[0].strip().isdigit():
            continue
        when = timestamps.from_unix(int(fields[0].strip()))
        for status, raw_path in zip(fields[1::2], fields[2::2], strict=False):
            status, path = status.strip()[:1], escape_name(raw_path)  # as the file's source_id
            if status in ("A", "M", "T"):
                updated.setdefault(path, when)
            if status == "A":
                created[path] = when  # the oldest add wins
    return {path: (created.get(path), when) for path, when in updated.items()}


def _with_url(load: Callable[[], SourceItem | None], web: str | None, path: str,
              dates: Callable[[], Dates]) -> Callable[[], SourceItem | None]:
    def loader() -> SourceItem | None:
        item = load()
        if item is None:
            return None
        if web:
            item.source_url = web + path
        known = dates().get(path)
        if known is not None:
            item.created_at = item.created_at or known[0]
            if not any(key in item.metadata for key in UPDATED_KEYS):
                item.updated_at = known[1]
        return item

    return loader
