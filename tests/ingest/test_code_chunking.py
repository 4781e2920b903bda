"""Code read as code: real tree-sitter parses of files written here, chunked by symbol, then searched
and read back through a real Harness over a git repository made in the test."""

from __future__ import annotations

import json
import logging
import subprocess
import time
from pathlib import Path

import pytest

from context_harness.common import symbols
from context_harness.common.symbols import Unparsed, content_type
from context_harness.core.harness import Harness
from context_harness.ingest.chunk_worker import chunk_rows
from context_harness.ingest.code_chunking import chunk_code
from context_harness.models import GetRequest, SearchRequest

pytestmark = pytest.mark.skipif(not symbols.available(), reason="the code extra (tree-sitter) is not installed")

SAMPLES = {  # language -> (path, source, symbol paths its chunks must carry)
    "python": ("pkg/harness.py", '''"""Module doc."""
import os

LIMIT = 3


# Opens every store.
def open_stores(path):
    """Open the stores."""
    return path


class Harness:
    """The core."""

    @classmethod
    def open(cls, config):
        return cls()
''', ["harness", "harness.open_stores", "harness.Harness", "harness.Harness.open"]),
    "javascript": ("src/app.js", '''import x from "y";
// Adds numbers
function add(a, b) { return a + b; }
export class Store {
  openStores() { return 1; }
}
const handler = (req) => req.body;
''', ["app", "app.add", "app.Store", "app.Store.openStores", "app.handler"]),
    "typescript": ("src/types.ts", '''export interface Config { name: string }
export type Id = string;
export enum Mode { A, B }
namespace NS { export function inner(): void {} }
export abstract class Base { helper(): number { return 1 } }
''', ["types.Config", "types.Id", "types.Mode", "types.NS.inner", "types.Base.helper"]),
    "tsx": ("src/App.tsx", "export function App() { return <div>hi</div>; }\n", ["App.App"]),
    "go": ("cmd/server/main.go", '''package main

// Harness is the core.
type Harness struct { n int }

// Open opens it.
func (h *Harness) Open(path string) error { return nil }
''', ["server", "server.Harness", "server.Harness.Open"]),
    "rust": ("src/store.rs", '''use std::fmt;

/// A store.
#[derive(Debug)]
pub struct Store { n: u32 }

impl Store {
    pub fn open(path: &str) -> Store { Store { n: 0 } }
}

mod inner { pub fn helper() {} }
''', ["store", "store.Store", "store.Store.open", "store.inner.helper"]),
    "java": ("src/Harness.java", '''package a.b;

/** The core. */
public class Harness {
    private int n;
    /** Opens. */
    public void open(String path) {}
}
''', ["Harness", "Harness.Harness", "Harness.Harness.open"]),
    "c": ("src/store.c", '''#include <stdio.h>

struct store { int n; };

/* Opens a store. */
int store_open(const char *path) { return 0; }
''', ["store", "store.store", "store.store_open"]),
    "cpp": ("src/store.cpp", '''#include <vector>
namespace ctx {
class Harness {
 public:
  void open(int a) { }
};
}
void ctx::Harness::close() {}
''', ["store", "store.ctx", "store.ctx.Harness", "store.ctx.Harness.open", "store.ctx.Harness.close"]),
    "csharp": ("src/Harness.cs", '''using System;
namespace Ctx.Core {
  /// The core.
  public class Harness {
    public Harness() {}
    public static Harness Open(string path) { return null; }
  }
  public interface IStore { void Run(); }
  public struct Point { public int X; }
}
''', ["Harness", "Harness.Ctx.Core", "Harness.Ctx.Core.Harness", "Harness.Ctx.Core.Harness.Open",
      "Harness.Ctx.Core.IStore", "Harness.Ctx.Core.Point"]),
    "ruby": ("lib/harness.rb", '''require "x"
# The core.
module Ctx
  class Harness < Base
    def self.open(config)
      new
    end
  end
end
def helper; end
''', ["harness", "harness.Ctx", "harness.Ctx.Harness", "harness.Ctx.Harness.open", "harness.helper"]),
    "php": ("src/Harness.php", '''<?php
namespace Ctx;
class Harness {
  public function open($p) { return 1; }
}
function helper() {}
''', ["Harness", "Harness.Harness", "Harness.Harness.open", "Harness.helper"]),
    "lua": ("tools/store.lua", '''local M = {}
-- Opens it.
function M.open(path) return 1 end
function M:close() end
local function helper() end
return M
''', ["store", "store.M.open", "store.M.close", "store.helper"]),
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_each_language_is_chunked_by_symbol(language: str) -> None:
    path, source, expected = SAMPLES[language]
    assert symbols.language_for(path) == language
    chunks = chunk_code(source, language, path, 256)
    headings = [c.heading_path[0] for c in chunks]
    assert set(expected) <= set(headings), headings
    # chunks are the body's text, in order, and lose none of its words
    assert " ".join(" ".join(c.text for c in chunks).split()) == " ".join(source.split())


def test_comments_and_decorators_belong_to_the_definition_below_them() -> None:
    chunks = {c.heading_path[0]: c.text for c in chunk_code(SAMPLES["python"][1], "python", "pkg/harness.py", 256)}
    assert chunks["harness.open_stores"].startswith("# Opens every store.")
    assert chunks["harness.Harness.open"].startswith("@classmethod")
    assert "LIMIT = 3" in chunks["harness"]  # module-level code between symbols is kept
    rust = [c.text for c in chunk_code(SAMPLES["rust"][1], "rust", "src/store.rs", 256)
            if c.heading_path == ["store.Store"]]
    assert rust[0].startswith("/// A store.\n#[derive(Debug)]") and rust[1].startswith("impl Store")


def test_a_large_symbol_is_split_into_parts_that_keep_its_path() -> None:
    body = "\n".join(f"    total += compute_value_{i}(alpha, beta, gamma)" for i in range(200))
    source = f"import os\n\n\ndef big(alpha, beta, gamma):\n    total = 0\n{body}\n    return total\n"
    chunks = chunk_code(source, "python", "calc.py", 64)
    parts = [c for c in chunks if c.heading_path == ["calc.big"]]
    assert len(parts) > 3
    assert "return total" in parts[-1].text and parts[0].text.startswith("def big")


def test_a_file_tree_sitter_cannot_parse_is_chunked_as_text_with_a_note(caplog: pytest.LogCaptureFixture) -> None:
    broken = "def ok():\n    return 1\n\ndef broken(:\n    pass\n"
    with pytest.raises(Unparsed, match="syntax error on line 4"):
        chunk_code(broken, "python", "broken.py", 256)
    with caplog.at_level(logging.WARNING):
        rows = chunk_rows("d", "broken.py", broken, 256, 0, content_type("python"))
    assert rows and "def broken(" in " ".join(row[2] for row in rows)
    assert "broken.py is chunked as text, not by symbol: tree-sitter found a syntax error on line 4" in caplog.text


def test_pathological_files_are_bounded() -> None:
    deep = "".join("    " * i + f"class C{i}:\n" + "    " * (i + 1) + f"def m{i}(self):\n" + "    " * (i + 2)
                   + "return 1\n" for i in range(60))
    chunks = chunk_code(deep, "python", "deep.py", 256)
    assert chunks[0].heading_path == ["deep.C0"] and max(len(c.heading_path[0].split(".")) for c in chunks) <= 18
    brackets = "x = " + "[" * 3000 + "]" * 3000 + "\n"
    assert chunk_rows("d", "nest.py", brackets, 256, 0, content_type("python"))  # parsed or read as text
    minified = "var a=function(b){return b+1};" * 170_000  # 5.1 MB on one line
    started = time.perf_counter()
    as_text = chunk_rows("d", "min.js", minified, 256, 0, None)
    text_seconds = time.perf_counter() - started
    started = time.perf_counter()
    as_code = chunk_rows("d", "min.js", minified, 256, 0, content_type("javascript"))
    code_seconds = time.perf_counter() - started
    assert as_code == as_text  # refused as minified: read as text
    assert code_seconds < 5 * text_seconds + 1.0, (code_seconds, text_seconds)


def test_presets_expand() -> None:
    assert symbols.expand_globs(["@code", "**/*.md"], ["**/*.txt"])[-1] == "**/*.md"
    assert "**/*.py" in symbols.expand_globs(["@code"], []) and symbols.expand_globs(["@default"], ["a"]) == ["a"]
    assert symbols.identifier_words("openStores open_stores HTTPServer x openStores get_userName") == [
        "open", "Stores", "HTTP", "Server", "get", "user", "Name"]


# -- through a Harness over a git repository --------------------------------------------------------

def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True)


HARNESS = '''"""The core service."""

from pathlib import Path


class Harness:
    """The one core service: opens the stores, searches them."""

    def __init__(self, config):
        self.config = config

    @classmethod
    def open(cls, config):
        """Open a harness over the configured workspace; the quokka comment marks it."""
        harness = cls(config)
        harness.openStores(Path(config))
{steps}
        return harness

    def openStores(self, path):
        # a flux capacitor keeps the stores warm
        return path
'''
USER = '''from core.harness import Harness


def main(config):
    """Harness.open Harness.open Harness.open: uses it, never defines it."""
    return Harness.open(config), Harness.open(config), Harness.open(config)
'''


@pytest.fixture
def code_repo(tmp_path: Path) -> Path:
    path = tmp_path / "upstream"
    (path / "core").mkdir(parents=True)
    steps = "\n".join(f"        harness.step_{i} = harness.config.get('step_{i}', {i})" for i in range(60))
    (path / "core" / "harness.py").write_text(HARNESS.replace("{steps}", steps))
    (path / "app.py").write_text(USER)
    (path / "README.md").write_text("# Readme\n\nHarness.open opens it.\n")
    git("init", "-q", "-b", "main", cwd=path)
    git("add", ".", cwd=path)
    git("commit", "-qm", "first", cwd=path)
    return path


@pytest.mark.anyio
async def test_search_finds_the_definition_first_and_get_returns_the_whole_symbol(workspace, code_repo: Path) -> None:
    workspace.write_config(f'[chunking]\nmax_tokens = 96\n\n[connectors.git.code]\nurl = "{code_repo}"\n'
                           'include_globs = ["@code", "@default"]\n')
    async with Harness.open(workspace.config()) as h:
        assert (await h.sync("git")).total("added") == 3
        top = (await h.search(SearchRequest(query="Harness.open", mode="keyword"))).results[0]
        assert top.source_id == "core/harness.py" and top.heading == "harness.Harness.open"
        doc = await h.get(GetRequest(id=top.id, chunk=top.chunk))
        assert doc.content_type == "text/x-code; language=python" and doc.metadata == {"language": "python"}
        assert {c.heading for c in doc.chunks} == {"harness.Harness.open"} and len(doc.chunks) > 1
        assert doc.body.lstrip().startswith("@classmethod") and doc.body.rstrip().endswith("return harness")
        # a class's chunk: the class whole, its methods included
        cls = (await h.search(SearchRequest(query="symbol:Harness", mode="keyword"))).results[0]
        assert cls.heading == "harness.Harness"
        whole = await h.get(GetRequest(id=cls.id, chunk=cls.chunk))
        assert whole.body.startswith("class Harness:") and whole.body.rstrip().endswith("return path")
        assert "def open(cls, config):" in whole.body and whole.range.start > 0
        # a symbol filter, in the request or the query; camelCase found by its words; comments searchable
        for request in (SearchRequest(query="stores", filters={"symbol": "Harness.openStores"}),
                        SearchRequest(query="symbol:openStores")):
            found = (await h.search(request)).results
            assert [(r.source_id, r.heading) for r in found] == [("core/harness.py", "harness.Harness.openStores")]
        assert (await h.search(SearchRequest(query="open stores", mode="keyword"))).results[0].source_id == \
            "core/harness.py"
        comment = (await h.search(SearchRequest(query="flux capacitor", mode="keyword"))).results
        assert [r.heading for r in comment] == ["harness.Harness.openStores"]
        docstring = (await h.search(SearchRequest(query="quokka", mode="keyword"))).results
        assert [r.source_id for r in docstring] == ["core/harness.py"]


def test_the_cli_filters_by_symbol(workspace, code_repo: Path) -> None:
    from click.testing import CliRunner

    from context_harness.cli import cli

    workspace.write_config(f'[connectors.git.code]\nurl = "{code_repo}"\ninclude_globs = ["@code"]\n')
    config = ["--config", str(workspace.config_path)]
    CliRunner().invoke(cli, ["sync", *config], catch_exceptions=False)
    out = CliRunner().invoke(cli, ["search", "stores", "--symbol", "Harness.openStores", "--json", *config],
                             catch_exceptions=False).output
    assert [r["heading"] for r in json.loads(out)["results"]] == ["harness.Harness.openStores"]


@pytest.mark.anyio
async def test_code_synced_before_the_upgrade_is_read_as_code_after_it(workspace, monkeypatch) -> None:
    """A workspace synced by a version that read code as prose (code files as text, keyword index 5,
    a chunking signature without the code chunker's version): the index rebuilds, the next sync
    re-chunks, and the definition is found."""
    from context_harness.ingest.chunking import CHUNKER_VERSION

    workspace.write("core/harness.py", HARNESS.replace("{steps}", ""))
    workspace.write_config('include_globs = ["@code"]\n')
    with monkeypatch.context() as old:
        old.setattr(symbols, "language_for", lambda path: None)
        async with Harness.open(workspace.config()) as h:
            await h.sync()
            assert h.store is not None
            h.store.set_meta("chunking:filesystem:docs", json.dumps(
                {"version": CHUNKER_VERSION, "max_tokens": 128, "overlap_tokens": 0}, sort_keys=True))
            top = (await h.search(SearchRequest(query="Harness.open", mode="keyword"))).results[0]
            assert top.heading != "harness.Harness.open"
    marker = workspace.root / "data" / "tantivy" / "ctx-index.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "version": 5}))
    async with Harness.open(workspace.config()) as h:
        assert (await h.sync()).total("updated") == 1
        top = (await h.search(SearchRequest(query="Harness.open", mode="keyword"))).results[0]
        assert top.source_id == "core/harness.py" and top.heading == "harness.Harness.open"


def test_without_the_grammars_code_is_chunked_as_text_and_said_once(monkeypatch, caplog) -> None:
    from context_harness.ingest import chunk_worker

    def missing(language: str) -> None:
        raise ImportError("No module named 'tree_sitter_language_pack'")

    monkeypatch.setattr(symbols, "_parser", missing)
    monkeypatch.setattr(chunk_worker, "_SAID", set())
    source = SAMPLES["python"][1]
    with caplog.at_level(logging.WARNING):
        for name in ("a.py", "b.py"):
            rows = chunk_rows("d", name, source, 256, 0, content_type("python"))
            assert "def open_stores(path):" in " ".join(row[2] for row in rows)
    said = [r.getMessage() for r in caplog.records]
    assert said == ["code files are chunked as text, not by symbol: the code extra (tree-sitter) is not installed: "
                    "pip install 'context-harness[code]'"]
    assert symbols.file_symbols(source, "python", "a.py") == []


@pytest.mark.anyio
async def test_the_symbol_filter_holds_in_semantic_and_hybrid_search(workspace, code_repo: Path) -> None:
    from context_harness.embedding import fake

    fake.register()
    workspace.write_config(f'[connectors.git.code]\nurl = "{code_repo}"\ninclude_globs = ["@code", "@default"]\n')
    workspace.config_path.write_text(workspace.config_path.read_text().replace('provider = "disabled"',
                                                                               'provider = "fake"'))
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        for mode in ("semantic", "hybrid"):
            found = (await h.search(SearchRequest(query="the stores", mode=mode,
                                                  filters={"symbol": "openStores"}))).results
            assert [(r.source_id, r.heading) for r in found] == [("core/harness.py", "harness.Harness.openStores")]
            assert (await h.search(SearchRequest(query="x", mode=mode, filters={"symbol": "nowhere"}))).results == []
        top = (await h.search(SearchRequest(query="Harness.open", mode="hybrid"))).results[0]
        assert (top.source_id, top.heading) == ("core/harness.py", "harness.Harness.open")


def test_query_symbols_are_names_no_prose_word_takes() -> None:
    from context_harness.store.keyword import query_symbols, symbol_ends

    assert query_symbols("where is Harness.open defined") == ["harness.open"]
    assert query_symbols("open_stores or openStores, ns::run") == ["open_stores", "openstores", "ns.run"]
    assert query_symbols("Harness") == ["harness"]  # a query of one word may be a name
    assert query_symbols("where is the store opened") == []
    assert symbol_ends("harness.Harness.open") == ["harness.harness.open", "harness.open", "open"]


def test_helper_processes_chunk_code_as_inline_chunking_does() -> None:
    from context_harness.ingest.chunk_worker import Chunker

    docs = [(f"d{language}", path, source, content_type(language)) for language, (path, source, _) in SAMPLES.items()]
    chunker = Chunker(64, 8, helpers=1, threshold=1)
    try:
        future = chunker.submit(docs)
        assert chunker._pool is not None  # a helper process really chunks them
        helped = chunker.result(future, docs)
    finally:
        chunker.close()
    inline = Chunker(64, 8, helpers=0)
    assert [d.chunks for d in helped] == [d.chunks for d in inline.result(inline.inline(docs), docs)]
    python = [c.heading for c in helped[list(SAMPLES).index("python")].chunks]
    assert set(SAMPLES["python"][2]) <= set(python)


@pytest.mark.anyio
async def test_ctx_check_repair_chunks_code_by_symbol_again(workspace) -> None:
    workspace.write("core/harness.py", HARNESS.replace("{steps}", ""))
    workspace.write_config('include_globs = ["@code"]\n')
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        assert h.store is not None
        (doc_id,) = h.store.all_ids()
        before = [c.heading for c in h.store.chunks(doc_id)]
        with h.store.transaction() as conn:
            conn.execute("DELETE FROM chunks WHERE doc_id=?", (doc_id,))  # a document left without chunks
        assert (await h.check(repair=True)).problems[0].kind == "unchunked"
        assert [c.heading for c in h.store.chunks(doc_id)] == before and "harness.Harness.open" in before
