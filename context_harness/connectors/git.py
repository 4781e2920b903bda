"""The git connector: a real clone of a repository, refreshed with ``git fetch`` on every sync,
then read like a folder (same globs, skips and limits as the filesystem connector).

The checkout lives in the workspace (``<data>/git/NAME``); ``source_id`` is the path inside the
repository; ``source_url`` points at the file on the remote's web view when the URL is a GitHub or
GitLab style HTTPS URL, else at the local checkout.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

from context_harness.config import FilesystemConnectorConfig, GitConnectorConfig
from context_harness.connectors.base import Candidate, ScanReport, SourceItem
from context_harness.connectors.filesystem import FilesystemConnector

log = logging.getLogger(__name__)
GIT_TIMEOUT = 600


class GitError(RuntimeError):
    """git failed; the message says what to fix."""


def _git(args: list[str], cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT,
                              env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise GitError("the `git` executable is not installed or not on PATH") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"`git {args[0]}` took longer than {GIT_TIMEOUT} s") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise GitError(f"`git {args[0]}` failed: {detail[-1] if detail else 'exit code ' + str(done.returncode)}")
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
        for candidate in inner.scan(report):
            yield Candidate(candidate.source_id, candidate.fingerprint,
                            _with_url(candidate.load, web, prefix + candidate.source_id))

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


def _with_url(load: Callable[[], SourceItem | None], web: str | None, path: str) -> Callable[[], SourceItem | None]:
    def loader() -> SourceItem | None:
        item = load()
        if item is not None and web:
            item.source_url = web + path
        return item

    return loader
