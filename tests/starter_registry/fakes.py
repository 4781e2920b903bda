"""Local fakes of the services the starter registry's extensions talk to, on 127.0.0.1 at a free port.

Each answers with the recorded responses in ``fixtures/`` (shaped like the real APIs: GitHub issue
objects and Link headers, Jira search pages, Confluence content pages with ``_links``, an RSS 2.0
and an Atom feed, an HTML article), with ``{{API}}``/``{{BASE}}`` replaced by the fake's own URL.
A test arms ``fail_once`` to make one request answer a rate limit first, and sets ``token`` to make
the fake require credentials (a wrong one gets the service's auth error). ``requests`` records what
came in.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from support.http import serve_in_thread
from support.paths import REPO

FIXTURES = Path(__file__).parent / "fixtures"
REGISTRY = REPO / "registry"

Answer = tuple[int, dict[str, str], bytes]


class Fake(ThreadingHTTPServer):
    """The server; ``answer`` (per service) turns a request into ``(status, headers, body)``."""

    daemon_threads = True
    folder = ""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[dict[str, Any]] = []
        self.token: str | None = None
        self.fail_once: dict[str, Answer] = {}  # request key -> the answer it gets the first time

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def fixture(self, name: str) -> bytes:
        text = (FIXTURES / self.folder / name).read_text(encoding="utf-8")
        return text.replace("{{API}}", self.url).replace("{{BASE}}", self.url).encode()

    def json_fixture(self, name: str) -> Any:
        return json.loads(self.fixture(name))

    def answer(self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes) -> Answer:
        raise NotImplementedError

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client that went away
        pass


class Handler(BaseHTTPRequestHandler):
    server: Fake

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.requests.append({"method": self.command, "path": url.path, "query": query,
                                     "headers": headers, "body": body})
        status, extra, payload = self.server.answer(self.command, url.path, query, headers, body)
        self.send_response(status)
        extra = {"Content-Type": "application/json; charset=utf-8", **extra}
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _handle


def once(fake: Fake, key: str) -> Answer | None:
    """The armed one-time answer for ``key``, disarming it."""
    return fake.fail_once.pop(key, None)


# -- GitHub -----------------------------------------------------------------------------------------

class GitHub(Fake):
    """``acme/rocket``: three pages of issues (a pull request among them) linked the way GitHub links
    them (``/repositories/ID/issues?page=N``), the repository's comments, and issue creation."""

    folder = "github"
    pages = 3

    def link(self, page: int) -> str:
        def at(n: int) -> str:
            return f"{self.url}/repositories/712345678/issues?state=all&per_page=100&sort=updated&direction=desc&page={n}"
        rels = []
        if page < self.pages:
            rels += [f'<{at(page + 1)}>; rel="next"', f'<{at(self.pages)}>; rel="last"']
        if page > 1:
            rels += [f'<{at(1)}>; rel="first"', f'<{at(page - 1)}>; rel="prev"']
        return ", ".join(rels)

    def limits(self, remaining: int = 4987) -> dict[str, str]:
        return {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": str(int(time.time()) + 3000), "X-RateLimit-Used": str(5000 - remaining),
                "X-RateLimit-Resource": "core", "X-GitHub-Api-Version-Selected": "2022-11-28"}

    def answer(self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes) -> Answer:
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            if method == "POST" and headers.get("authorization") == "Bearer read-only":
                return 403, self.limits(), self.fixture("403-not-accessible.json")
            return 401, {}, self.fixture("401-bad-credentials.json")
        if method == "POST" and path == "/repos/acme/rocket/issues":
            return self.create(json.loads(body))
        if path in ("/repos/acme/rocket/issues", "/repositories/712345678/issues"):
            page = int(query.get("page", "1"))
            armed = once(self, f"issues?page={page}")
            if armed is not None:
                return armed
            return 200, {"Link": self.link(page), **self.limits()}, self.fixture(f"issues-page{page}.json")
        if path == "/repos/acme/rocket/issues/comments":
            return 200, self.limits(), self.fixture("comments.json")
        return 404, {}, b'{"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}'

    def create(self, data: dict[str, Any]) -> Answer:
        if len(data.get("title", "")) > 256:
            return 422, self.limits(), self.fixture("422-validation.json")
        issue = self.json_fixture("created-issue.json")
        issue.update(title=data["title"], body=data.get("body"),
                     labels=[{"name": name, "default": False} for name in data.get("labels", [])])
        return 201, {"Location": issue["url"], **self.limits()}, json.dumps(issue).encode()

    def rate_limit_answer(self, reset_in: int) -> Answer:
        """GitHub's primary rate-limit answer: 403, no requests left, the reset time."""
        headers = {**self.limits(remaining=0), "X-RateLimit-Reset": str(int(time.time()) + reset_in)}
        return 403, headers, self.fixture("403-rate-limit.json")


# -- Jira -------------------------------------------------------------------------------------------

class Jira(Fake):
    """``/rest/api/2/search``: five OPS issues recorded two a page (startAt 0, 2, 4), basic auth; the same
    issues from Cloud's ``/rest/api/2/search/jql`` (nextPageToken, isLast). ``retired``: the first
    answers 410 Gone, as Jira Cloud does since it removed it."""

    folder = "jira"
    email = "dana@acme.test"
    retired = False

    def answer(self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes) -> Answer:
        expected = "Basic " + base64.b64encode(f"{self.email}:{self.token}".encode()).decode()
        if headers.get("authorization") != expected:
            return 401, {"WWW-Authenticate": 'OAuth realm="https%3A%2F%2Facme.atlassian.net"'}, \
                self.fixture("401-not-authenticated.json")
        if path == "/rest/api/2/search/jql":
            page = {None: 1, "CAEaAggCIgwKBzEwMDQ0EgE0": 2, "CAEaAggEIgwKBzEwMDQyEgE2": 3}[query.get("nextPageToken")]
            return 200, {}, self.fixture(f"search-jql-page{page}.json")
        if path != "/rest/api/2/search":
            return 404, {}, b'{"errorMessages": ["Not found"], "errors": {}}'
        if self.retired:
            return 410, {}, self.fixture("410-search-removed.json")
        if "NOPE" in query.get("jql", ""):
            return 400, {}, self.fixture("400-bad-jql.json")
        start = int(query.get("startAt", "0"))
        armed = once(self, f"search?startAt={start}")
        if armed is not None:
            return armed
        return 200, {"X-ASESSIONID": "1x9k2d3", "X-Seraph-LoginReason": "OK"}, self.fixture(f"search-startAt{start}.json")


# -- Confluence -------------------------------------------------------------------------------------

class Confluence(Fake):
    """``/wiki/rest/api/content`` for space ENG: five pages recorded two a page, ``_links.next``."""

    folder = "confluence"

    def answer(self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes) -> Answer:
        if headers.get("authorization") != f"Bearer {self.token}":
            return 401, {}, self.fixture("401-unauthorized.json")
        if path != "/wiki/rest/api/content" or query.get("spaceKey") != "ENG":
            return 404, {}, b'{"statusCode": 404, "message": "No space with key : NOPE"}'
        start = int(query.get("start", "0"))
        armed = once(self, f"content?start={start}")
        if armed is not None:
            return armed
        return 200, {}, self.fixture(f"content-start{start}.json")


# -- feeds and web pages ----------------------------------------------------------------------------

class Files(Fake):
    """Static files: the feeds, the HTML article, a binary file, and what a test puts in ``pages``."""

    folder = ""
    routes = {"/feed.xml": ("feeds/rss.xml", "application/rss+xml; charset=UTF-8"),
              "/atom.xml": ("feeds/atom.xml", "application/atom+xml"),
              "/article.html": ("web/article.html", "text/html; charset=utf-8")}

    def __init__(self) -> None:
        super().__init__()
        self.pages: dict[str, tuple[str, bytes]] = {}  # path -> (content type, body)

    def answer(self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes) -> Answer:
        if path in self.pages:
            content_type, payload = self.pages[path]
            return 200, {"Content-Type": content_type}, payload
        if path in self.routes:
            name, content_type = self.routes[path]
            return 200, {"Content-Type": content_type}, self.fixture(name)
        if path == "/logo.png":
            return 200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + bytes(64)
        return 404, {"Content-Type": "text/html"}, b"<h1>Not Found</h1>"


@contextmanager
def serving(kind: type[Fake]) -> Iterator[Any]:
    """A ``kind`` fake served from a thread for the ``with`` block."""
    fake = kind()
    with serve_in_thread(fake):
        yield fake


# -- running the extensions -------------------------------------------------------------------------

def extension(rel: str) -> str:
    """The POSIX path of a file in the starter registry, for a config."""
    return (REGISTRY / rel).as_posix()


async def documents(harness: Any, source: str) -> dict[str, Any]:
    """Every stored document of ``source`` by ``source_id`` (``DocumentOut``, the full text)."""
    out: dict[str, Any] = {}
    cursor = None
    while True:
        page = await harness.document_listing(cursor, 100)
        for entry in page.documents:
            if entry.source == source:
                doc = await harness.get(entry.id)
                out[doc.source_id] = doc
        cursor = page.next_cursor
        if cursor is None:
            return out
