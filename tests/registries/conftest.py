"""Fixtures for the registry tests: a page server on 127.0.0.1 and a project using a test registry."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from support.http import serve_in_thread
from support.registries import FILES, MANIFEST, config_text, make_registry


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class Pages:
    folder: Path
    port: int

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


@pytest.fixture
def pages(tmp_path: Path) -> Iterator[Pages]:
    """Files of ``pages.folder`` served over HTTP on 127.0.0.1."""
    folder = tmp_path / "www"
    folder.mkdir()
    (folder / "hello.txt").write_text("hello from the declared host\n", encoding="utf-8")
    (folder / "feed.txt").write_text("a1|Quokkas|Quokkas live on Rottnest island\n"
                                     "b2|Wombats|Wombats leave cube-shaped droppings\n", encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    with serve_in_thread(server):
        yield Pages(folder, server.server_address[1])


@dataclass
class Project:
    registry: Path
    config: Path

    @property
    def folder(self) -> Path:
        return self.config.parent


@pytest.fixture
def project(tmp_path: Path, pages: Pages) -> Project:
    """A project whose ctx.toml names one registry (``community``) with the test extensions; its tools'
    declared host is the page server."""
    registry = make_registry(tmp_path / "reg", MANIFEST.format(port=pages.port), FILES)
    folder = tmp_path / "proj"
    folder.mkdir()
    config = folder / "ctx.toml"
    config.write_text(config_text({"community": ("../reg", "community")}), encoding="utf-8")
    return Project(registry, config)
