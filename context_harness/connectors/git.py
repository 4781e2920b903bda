"""The git connector: a real clone of a repository, refreshed with ``git fetch`` on every sync,
then read like a folder (same globs, skips and limits as the filesystem connector).

The checkout lives in the workspace (``<data>/git/NAME``); ``source_id`` is the path inside the
repository; ``source_url`` points at the file on the remote's web view when the URL is a GitHub or
GitLab style HTTPS URL, else at the local checkout.

Dates (full clones, ``shallow = false``): one ``git log`` pass per sync, made when the first changed
file is loaded, gives each file's ``created_at`` (the oldest commit that added it) and ``updated_at``
(the newest commit that added or changed it; front matter dates still win). A shallow clone has no
history to ask, so its files keep the file time and get ``created_at`` from their first sync.

git is called safely (``run_git``): a URL must pass ``url_problem`` (https, ssh, git, file, scp-like
``user@host:path`` or a local path; nothing that git would read as an option or a transport helper
such as ``ext::`` or ``fd::``), ``--`` (or ``--end-of-options``) precedes every positional argument,
``GIT_ALLOW_PROTOCOL`` allows only those transports again, and every call has a deadline after
which git and everything it started (``git-remote-https``, ``ssh``) are killed.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

from context_harness.common import timestamps
from context_harness.common.redaction import redact
from context_harness.config import FilesystemConnectorConfig, GitConnectorConfig
from context_harness.connectors.base import Candidate, ScanReport, SourceItem
from context_harness.connectors.filesystem import FilesystemConnector
from context_harness.connectors.names import escape_name
from context_harness.errors import ConfigError

log = logging.getLogger(__name__)
GIT_TIMEOUT = 600  # seconds for one git call of a git source (clone, fetch, ...); then it is killed
ALLOWED_SCHEMES = ("https", "ssh", "git", "file")
SSH_ALIASES = ("git+ssh", "ssh+git")  # spellings git reads as ssh
ALLOWED_PROTOCOLS = "https:ssh:git:file"  # GIT_ALLOW_PROTOCOL: what git itself may use (local paths are "file")
KILL_WAIT = 5.0  # seconds to collect a killed git's output
UPDATED_KEYS = ("updated", "updated_at", "modified")  # front matter dates that win over the history
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_HELPER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")  # <transport>::<address>: a remote helper (ext::, fd::)

Dates = dict[str, tuple[dt.datetime | None, dt.datetime]]
"""path in the repository -> (created: oldest commit adding it, updated: newest commit adding or changing it)."""


class GitError(RuntimeError):
    """git failed; the message says what to fix."""


def url_problem(url: str) -> str | None:
    """Why git must not be given ``url``, or None. Allowed: ``https://``, ``ssh://`` (``git+ssh://``),
    ``git://`` and ``file://`` URLs, scp-like ``[user@]host:path`` and local paths."""
    if not url.strip():
        return "is empty"
    if url.startswith("-"):
        return "starts with '-', which git would read as an option"
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        return "holds a control character"
    if _HELPER.match(url):
        return (f"uses git's remote-helper syntax {url.split('::', 1)[0]}::, which can run commands; "
                f"use an {', '.join(ALLOWED_SCHEMES[:-1])} or {ALLOWED_SCHEMES[-1]} URL, user@host:path or a path")
    found = _SCHEME.match(url)
    if found:
        scheme = found.group(1).lower()
        if scheme not in ALLOWED_SCHEMES + SSH_ALIASES:
            hint = " (use https)" if scheme == "http" else ""
            return (f"uses the scheme {scheme!r}{hint}; allowed: {', '.join(ALLOWED_SCHEMES)}, "
                    "user@host:path or a local path")
        host = url[found.end():].split("/", 1)[0].rsplit("@", 1)[-1]
        if host.startswith("-"):
            return "names a host starting with '-', which ssh would read as an option"
        return None
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash == -1 or colon < slash) and url[:colon].rsplit("@", 1)[-1].startswith("-"):
        return "names a host starting with '-', which ssh would read as an option"  # scp-like user@host:path
    return None


def check_url(url: str, where: str, error: type[Exception] = GitError) -> str:
    """``url`` when git may be given it, else ``error`` naming ``where`` it is set and what to fix."""
    problem = url_problem(url)
    if problem is not None:
        raise error(f"{where}: url {url!r} {problem}")
    return url


def _git(args: list[str], cwd: Path | None = None) -> str:
    return run_git(args, cwd)


def run_git(args: list[str], cwd: Path | None = None, error: type[Exception] = GitError,
            timeout: float | None = None) -> str:
    """``git *args`` without a terminal or a prompt, only over the allowed transports; its stdout,
    or ``error`` naming what failed. After ``timeout`` seconds (default ``GIT_TIMEOUT``) git and every
    process it started are killed and ``error`` says so."""
    limit = GIT_TIMEOUT if timeout is None else timeout
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true",
           "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS}
    try:
        # its own session: no terminal to prompt on, and one process group to kill
        process = subprocess.Popen(["git", *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=env, start_new_session=True)
    except FileNotFoundError:
        raise error("the `git` executable is not installed or not on PATH") from None
    try:
        out, err = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise error(f"`git {args[0]}` did not finish within {limit:g} s and was stopped (a remote that does not "
                    "answer?); check the URL and the network, then try again") from None
    except BaseException:
        _kill(process)
        raise
    stdout, stderr = _text(out), _text(err)
    if process.returncode != 0:
        detail = (stderr or stdout).strip().splitlines()
        raise error(f"`git {args[0]}` failed: {detail[-1] if detail else 'exit code ' + str(process.returncode)}")
    return stdout.strip()


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill git and what it started (its process group), then collect it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    try:
        process.communicate(timeout=KILL_WAIT)
    except subprocess.TimeoutExpired:  # a child that left the group still holds the pipes
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        process.wait(timeout=KILL_WAIT)


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="surrogateescape")


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
        problem = self.refusal()
        if problem is not None:
            return False, problem
        if not (self.checkout / ".git").is_dir():
            return True, "not cloned yet; `ctx sync` clones it"
        return True, None

    def refusal(self) -> str | None:
        """Why this source's url or branch is not given to git, or None."""
        where = f"; fix it in [connectors.git.{self.name}]"
        problem = url_problem(self.config.url)
        if problem is not None:  # health notes are not scrubbed like errors: no credentials in it
            return f"{self.label}: url {redact(self.config.url)!r} {problem}{where}"
        branch = self.config.branch
        if branch is not None and (not branch.strip() or branch.startswith("-")
                                   or any(ord(c) < 33 or ord(c) == 127 for c in branch)):
            return f"{self.label}: branch {branch!r} is not a branch name (empty, a leading '-', a space){where}"
        return None

    def update(self) -> str:
        """Clone or fetch, then check out the wanted branch; returns the commit id. ``ConfigError``
        when the url or branch is refused (nothing runs)."""
        problem = self.refusal()
        if problem is not None:
            raise ConfigError(problem)
        depth = ["--depth", "1"] if self.config.shallow else []
        if not (self.checkout / ".git").is_dir():
            if self.checkout.exists():
                shutil.rmtree(self.checkout)
            self.checkout.parent.mkdir(parents=True, exist_ok=True)
            branch = [f"--branch={self.config.branch}"] if self.config.branch else []
            _git(["clone", "--quiet", *depth, *branch, "--", self.config.url, str(self.checkout)])
        else:
            ref = self.config.branch or "HEAD"
            _git(["fetch", "--quiet", *depth, "--", "origin", ref], cwd=self.checkout)
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
