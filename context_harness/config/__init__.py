"""``ctx.toml`` -> one validated ``Config``.

Discovery order: ``--config``, ``$CTX_CONFIG``, ``./.ctx/config.toml``, ``./ctx.toml``, then the XDG
config file. ``${VAR}`` and ``${VAR:-default}`` expand in every string; relative paths resolve
against the config file's folder. A component (connector, Lua tool, agent) whose table uses an unset
variable is set aside and reported unhealthy, and so is HTTP when a key only it reads (``[server]
auth_token``, ``bind`` ...) does (``Config.require_http``); an unset variable anywhere else (``[db]``,
``[embedding]`` ...) fails the load, naming the key path.
Every error names the file, the key path and what was expected.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from context_harness.common import analysis, redaction
from context_harness.config.hooks import HooksConfig as HooksConfig  # re-exported: `ctx hook` reads it
from context_harness.config.language import LanguageField as _Language
from context_harness.config.messages import REFERENCE
from context_harness.config.messages import (
    describe_validation_error as describe_validation_error,  # re-exported: agents and registries use it
)
from context_harness.config.server import ServerConfig as ServerConfig  # re-exported: the HTTP server reads it
from context_harness.config.server import UiConfig as UiConfig  # re-exported: the console reads it
from context_harness.config.server import _Section  # the base of every table
from context_harness.config.variables import (
    AGENT_RESERVED as AGENT_RESERVED,  # re-exported: agents and registries read it
)
from context_harness.config.variables import Unavailable, expand_vars, http_unavailable, set_aside
from context_harness.errors import ConfigError

CONFIG_ENV = "CTX_CONFIG"
DEFAULT_INCLUDE_GLOBS = ["**/*.md", "**/*.markdown", "**/*.mdx", "**/*.txt", "**/*.rst"]
# Documents join the default globs when the extra `context-harness[documents]` is installed, each glob
# when the module that converts it imports (formats/documents.py FORMATS). CSV and e-mail are read by the
# standard library: they join with the extra (python-docx stands for it), not on every install.
DOCUMENT_INCLUDE_GLOBS = {
    "**/*.pdf": "pypdfium2", "**/*.docx": "docx", "**/*.html": "lxml", "**/*.htm": "lxml",
    "**/*.pptx": "pptx", "**/*.xlsx": "openpyxl", "**/*.ods": "odf", "**/*.odt": "odf", "**/*.epub": "ebooklib",
    "**/*.ipynb": "nbformat", "**/*.csv": "docx", "**/*.eml": "docx", "**/*.mbox": "docx",
}
DOCUMENTS_EXTRA_MODULES = tuple(dict.fromkeys(DOCUMENT_INCLUDE_GLOBS.values()))
# Pictures join the default globs of folders, git and S3 sources only with [formats] ocr = true (Config).
IMAGE_INCLUDE_GLOBS = ["**/*.png", "**/*.jpg", "**/*.jpeg", "**/*.tif", "**/*.tiff"]
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MIN_SYNC_INTERVAL = 1.0


def parse_duration(text: str) -> float | None:
    """Seconds in a duration such as ``"30s"``, ``"15m"``, ``"1h"`` or ``"1h30m"``; None for ``"off"``.
    ``ValueError`` (naming the accepted forms) for anything else."""
    compact = text.strip().lower().replace(" ", "")
    if compact in ("off", "never", "0", ""):
        return None
    parts = _DURATION_PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise ValueError('expected a duration such as "30s", "15m", "1h" or "1h30m", or "off"')
    seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    if seconds < MIN_SYNC_INTERVAL:
        raise ValueError(f"must be at least {MIN_SYNC_INTERVAL:g}s (or \"off\")")
    return seconds


class _Interval(BaseModel):
    """``sync_interval``: how often a serving process re-syncs the connector (``"off"``: never)."""

    sync_interval: str | None = Field(
        default=None, description='how often a server (or `ctx watch`) re-syncs this source: a duration such as "30s", '
        '"15m", "1h" or "1h30m" (at least 1 s); unset or "off": never. Folders are watched as well; this is also '
        "their poll interval when watching fails (10 s then by default)")

    @field_validator("sync_interval")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @property
    def sync_seconds(self) -> float | None:
        return parse_duration(self.sync_interval) if self.sync_interval else None


def default_include_globs() -> list[str]:
    """Markdown, text and rst; the documents (PDF, DOCX, HTML, PPTX, XLSX, ODS, ODT, EPUB, notebooks, CSV,
    e-mail) too, each when the documents extra's module that converts it is installed."""
    return DEFAULT_INCLUDE_GLOBS + [glob for glob, module in DOCUMENT_INCLUDE_GLOBS.items() if _importable(module)]


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class DbConfig(_Section):
    """``[db]``: where the workspace (documents, chunks, keyword index, vectors) lives."""

    path: Path = Field(default=Path("data/ctx.sqlite"), description="SQLite file; other stores live beside it.")
    backend: Literal["embedded", "postgres"] = Field(
        default="embedded", description="embedded (SQLite + Tantivy + vectors in the data folder) or postgres")
    url: str | None = Field(default=None, description='postgres: a libpq URL, e.g. "${CTX_DATABASE_URL}"')
    read_url: str | None = Field(default=None, description="postgres: a hot standby of url (a streaming replica) "
                                 "for searches, get and listings; writes, the writer lock and sync's reads stay "
                                 "on url, and reads fall back to it while the standby is down")
    pool_size: int = Field(default=8, ge=1, le=256, description="postgres: connections per process for searches "
                           "and writes (two more serve point reads such as get)")
    keyword_index: Literal["replica", "database"] = Field(
        default="replica", description='postgres: where keyword search runs: "replica" (a Tantivy index in this '
        "replica's data folder, kept current from the database's change log; the database stays the truth) or "
        '"database" (BM25 in SQL: no local files, several ms of database CPU per search)')
    pool_wait: float = Field(default=2.0, gt=0, le=300, description="postgres: seconds a read waits for a free "
                             "connection before it answers busy (retry) instead of queueing without bound")

    @model_validator(mode="after")
    def _postgres_has_url(self) -> DbConfig:
        if self.backend == "postgres" and not (self.url or "").strip():
            raise ValueError('backend "postgres" needs url = "postgresql://..." (e.g. "${CTX_DATABASE_URL}")')
        if self.url and self.backend != "postgres":
            raise ValueError('url is only read with backend = "postgres"; set it, or remove url')
        if self.read_url and self.backend != "postgres":
            raise ValueError('read_url is only read with backend = "postgres"; set it, or remove read_url')
        return self


class ChunkingConfig(_Section):
    """``[chunking]``: how documents are cut into the chunks that are indexed and embedded."""

    max_tokens: int = Field(default=128, ge=32, le=8192, description="estimated tokens per chunk; the estimate is "
                            "calibrated on the bundled MiniLM tokenizer so chunks fit its 256-token window")
    overlap_tokens: int = Field(default=0, ge=0, description="tokens of the previous chunk repeated at the start of "
                                "the next when a section is split")

    @field_validator("overlap_tokens")
    @classmethod
    def _overlap_below_max(cls, value: int, info: Any) -> int:
        max_tokens = info.data.get("max_tokens", 256)
        if value >= max_tokens:
            raise ValueError(f"must be smaller than chunking.max_tokens ({max_tokens})")
        return value


class FormatsConfig(_Section):
    """``[formats]``: how documents of the documents extra are read."""

    notebook_outputs: bool = Field(default=False, description="index the text outputs of Jupyter notebooks' code "
                                   "cells (streams, results, errors; 10,000 characters a cell) after each cell; "
                                   "off: code and Markdown only")
    ocr: bool = Field(default=False, description="read PDF pages without a text layer (scans) and pictures (PNG, "
                      "JPEG, TIFF; their globs join the default include_globs) by OCR, offline (RapidOCR; the "
                      "extra \"ocr\"); off: such pages are skipped as needs_ocr")
    ocr_page_seconds: float = Field(default=60.0, gt=0, le=3600, description="with ocr: the time one page's OCR "
                                    "may take; past it the page is skipped (ocr_timeout) and the rest is read")


class EmbeddingConfig(_Section):
    """``[embedding]``: the model that turns chunks and queries into vectors for semantic search."""

    provider: str = Field(default="local", pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$",
                          description="local, openai, disabled, or a provider registered by an extension")
    model: str | None = Field(default=None, description='"multilingual-e5-small" (about 100 languages; the extra '
                              '"multilingual"), a fastembed model name, or the remote model for openai; unset: the '
                              "bundled offline model (all-MiniLM-L6-v2, English)")
    model_path: Path | None = Field(default=None, description="a local model folder")
    model_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$", description="model_path: the "
                                     "SHA-256 of the folder's ONNX weights, checked when the model loads (a "
                                     "mismatch is an error, never other vectors); unset: not checked")
    base_url: str | None = Field(default=None, description='openai: the OpenAI-compatible endpoint, e.g. '
                                 '"http://127.0.0.1:11434/v1"')
    api_key: str | None = Field(default=None, description='openai: the API key, usually "${OPENAI_API_KEY}"')
    dims: int | None = Field(default=None, ge=1, description="vector size, when the provider cannot tell")
    batch_size: int = Field(default=16, ge=1, le=2048, description="texts per embedding batch")
    threads: int | None = Field(default=None, ge=1, description="local: ONNX threads (bundled model: parallel "
                                "single-threaded sessions for documents); unset: one per core")
    quantized_queries: bool = Field(default=True, description="bundled model: embed queries with an int8-quantised "
                                    "copy of the model (about 1.5x faster; cosine ~0.994 with the exact vector)")
    quantized_documents: bool = Field(default=True, description="bundled model: embed documents with the int8 copy "
                                      "too (2x the chunks/s); a change is a model switch (re-embeds in the background)")
    max_retries: int = Field(default=5, ge=0, le=20, description="openai: retries on 429/5xx, timeouts and dropped "
                             "connections (a refused connection fails at once)")
    timeout: float = Field(default=60.0, gt=0, description="seconds per embedding request")


class RetrievalConfig(_Section):
    """``[retrieval]``: how searches rank and cut their results."""

    default_mode: Literal["auto", "keyword", "semantic", "hybrid"] = Field(
        default="auto", description="the mode of a search that names none; auto: hybrid when the index holds "
        "vectors, else keyword")
    final_limit: int = Field(default=12, ge=1, le=100, description="results returned when a search gives no limit")
    candidate_k: int = Field(default=50, ge=1, le=10_000, description="candidates per retriever before hybrid "
                             "fusion (raised to the request's limit when that is larger)")
    title_boost: float = Field(default=0.25, ge=0, description="weight of a title match relative to a body match")
    heading_boost: float = Field(default=0.0, ge=0, description="weight of a match in a document's headings "
                                 "(beside the body, which holds them too) relative to a body match; keyword index, "
                                 "not BM25 in SQL (0: off)")
    title_match: float = Field(default=0.15, ge=0, le=1, description="added to a hybrid result's score when its "
                               "title holds every word of the query (0: off)")
    fusion: Literal["scaled", "convex", "rrf"] = Field(
        default="scaled", description="hybrid fusion: scaled (BM25 over the query's own reference plus cosine "
        "similarity: the same at any candidate count), convex (min-max normalised scores) or rrf (reciprocal "
        "rank fusion)")
    hybrid_alpha: float | None = Field(default=None, ge=0, le=1, description="weight of the semantic list in "
                                       "scaled and convex fusion; unset: the tuned default (scaled 0.63, convex 0.5)")
    min_score: float | None = Field(default=None, ge=0, le=1, description="hybrid results (scaled fusion) "
                                    "scoring below this are left out, so a question the knowledge base cannot "
                                    "answer gets few or none; unset: 0.26 with the bundled model (tuned on SciFact "
                                    "train and off-topic questions), 0 (every result) with other embedders")
    rrf_k: int = Field(default=60, ge=1, description="the constant k of reciprocal rank fusion")
    snippet_chars: int = Field(default=240, ge=40, le=4000, description="snippet length in characters")
    rerank: str = Field(default="off", pattern=r"^(off|http|local:\S+)$", description='rerank the top results: '
                        'off, http (a /rerank endpoint: rerank_url) or "local:<fastembed cross-encoder>" (from '
                        'the model cache only: nothing downloads at run time)')
    rerank_url: str | None = Field(default=None, description="rerank = http: the endpoint's URL, e.g. "
                                   '"http://127.0.0.1:8080/rerank" (vLLM, llama.cpp, TEI, Jina and Cohere shape)')
    rerank_model: str | None = Field(default=None, description="rerank = http: the model name sent to the endpoint")
    rerank_api_key: str | None = Field(default=None, description='rerank = http: sent as a Bearer token, e.g. '
                                       '"${RERANK_API_KEY}"')
    rerank_top_n: int = Field(default=50, ge=2, le=1000, description="how many of the top results are reranked")
    rerank_budget_ms: int = Field(default=800, ge=1, description="time the reranker gets per search; beyond it "
                                  "the fused order stays and the notice says so")


class FilesystemConnectorConfig(_Section, _Interval, _Language):
    """``[connectors.filesystem.NAME]``: a folder, watched while serving; source label ``filesystem:NAME``."""

    root: Path = Field(description="the folder to index")
    include_globs: list[str] = Field(default_factory=default_include_globs, description="files to index "
                                     '(gitignore-style patterns; "@code": every code file, read by symbol, '
                                     '"@default": these defaults)')
    exclude_globs: list[str] = Field(default_factory=list, description="files or folders to leave out")
    respect_gitignore: bool = Field(default=True, description="honour .gitignore files (root and nested)")
    follow_symlinks: bool = Field(default=True, description="follow symlinks that stay inside root (ones that "
                                  "escape are always skipped)")
    max_file_size: int = Field(default=2_000_000, ge=1, description="bytes; larger files are skipped and counted")
    writable: bool = Field(default=False, description="let the note tools write, edit, move and delete Markdown "
                           "notes under root (off: the folder is only read)")
    write_globs: list[str] = Field(default_factory=list, description="with writable: where notes may be written "
                                   "(gitignore-style patterns; empty: anywhere under root)")
    front_matter: bool = Field(default=False, description="with writable: write a new note's title and tags as "
                               "YAML front matter (off: a '# Title' line and a 'Tags:' line)")


class GitConnectorConfig(_Section, _Interval, _Language):
    """``[connectors.git.NAME]``: a git repository, cloned and pulled; source label ``git:NAME``."""

    sync_interval: str | None = Field(default="10m", description="how often a server (or `ctx watch`) fetches and "
                                      're-syncs the repository; "off": only on `ctx sync` and at start')
    url: str = Field(description="the repository: an https, ssh, git or file URL, user@host:path or a local path "
                     "(credentials come from your git setup)")
    branch: str | None = Field(default=None, description="the branch to check out; unset: the remote's default")
    root: str = Field(default=".", description="the folder inside the repository to index")
    include_globs: list[str] = Field(default_factory=default_include_globs, description="files to index "
                                     '(gitignore-style patterns; "@code": every code file, read by symbol, '
                                     '"@default": these defaults)')
    exclude_globs: list[str] = Field(default_factory=list, description="files or folders to leave out")
    max_file_size: int = Field(default=2_000_000, ge=1, description="bytes; larger files are skipped and counted")
    shallow: bool = Field(default=True, description="clone and fetch with --depth 1")


class S3ConnectorConfig(_Section, _Interval, _Language):
    """``[connectors.s3.NAME]``: objects of an S3 bucket (AWS or S3-compatible: MinIO, R2, B2, LocalStack);
    source label ``s3:NAME``. Needs the extra ``context-harness[s3]``."""

    sync_interval: str | None = Field(default="10m", description="how often a server (or `ctx watch`) lists the "
                                      'bucket again and fetches what changed; "off": only on `ctx sync` and at start')
    bucket: str = Field(min_length=1, description="the bucket's name")
    prefix: str = Field(default="", description='the folder of the bucket to index ("docs" and "docs/" are the '
                        'same); "": the whole bucket')
    region: str | None = Field(default=None, description="the bucket's region; unset: from the AWS configuration "
                               "(AWS_REGION, ~/.aws/config), else us-east-1")
    endpoint_url: str | None = Field(default=None, description='an S3-compatible service, e.g. "http://127.0.0.1:9000" '
                                     '(MinIO) or "https://ACCOUNT.r2.cloudflarestorage.com" (R2); unset: AWS')
    profile: str | None = Field(default=None, description="a profile of ~/.aws/config and ~/.aws/credentials; unset: "
                                "the usual AWS chain (environment, AWS_PROFILE, the default profile, SSO, instance "
                                "roles)")
    access_key_id: str | None = Field(default=None, description='credentials given here instead of the AWS chain, '
                                      'written as "${VAR}" (never shown in logs, errors or sources)')
    secret_access_key: str | None = Field(default=None, description='the secret of access_key_id, written as '
                                          '"${VAR}"')
    session_token: str | None = Field(default=None, description='a temporary session token, written as "${VAR}"')
    include_globs: list[str] = Field(default_factory=default_include_globs, description="keys to index, relative to "
                                     'prefix (gitignore-style patterns and presets, as for folders)')
    exclude_globs: list[str] = Field(default_factory=list, description="keys or folders to leave out")
    max_file_size: int = Field(default=2_000_000, ge=1, description="bytes; larger objects are skipped and counted")
    timeout: float = Field(default=60, gt=0, le=3600, description="seconds one request (a listing page, an object "
                           "GET with its body) may take in all, retries included; connecting gets 10 s at most an "
                           "attempt; an endpoint that hangs or drips its answer is given up after it")

    @model_validator(mode="after")
    def _key_pair(self) -> S3ConnectorConfig:
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError("access_key_id and secret_access_key go together: set both, or neither (to use the "
                             "AWS chain)")
        if self.session_token is not None and self.access_key_id is None:
            raise ValueError("session_token needs access_key_id and secret_access_key")
        return self


class ScriptConfig(BaseModel):
    """A Lua script entry (a tool, or an agent of ``[agents.script.NAME]``): the keys listed here are validated;
    every other key reaches the script in its ``config`` table."""

    model_config = ConfigDict(extra="allow")

    path: Path = Field(description="the Lua script")
    timeout: float | None = Field(default=None, gt=0, description="seconds before the script is stopped; unset: 30 "
                                  "for a tool or agent, 300 for a connector")
    memory_limit: int | None = Field(default=None, ge=1_048_576, description="bytes of Lua memory; unset: 64 MiB")
    env: list[str] = Field(default_factory=list, description="environment variables the script may read with "
                           "env.get")
    # Not part of the file: for a script from an extension registry, what its manifest grants (a
    # ``lua.grant.Grant``, set by ``registries``); None: the user's own script, every host table.
    _grant: Any = PrivateAttr(default=None)

    @property
    def extra(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def grant(self) -> Any:
        return self._grant

    def set_grant(self, grant: Any) -> None:
        self._grant = grant


class ScriptConnectorConfig(ScriptConfig, _Interval, _Language):
    """``[connectors.script.NAME]``: a Lua connector script defining ``connector.scan(config)``; source label
    ``script:NAME``. Every key not listed here reaches the script in its ``config`` table."""


class ConnectorsConfig(_Section):
    """The built-in connector types, plus ``[connectors.<type>.NAME]`` tables of extension types
    (kept as given; the connector registry names a type no installed package provides)."""

    model_config = ConfigDict(extra="allow", validate_default=True)

    filesystem: dict[str, FilesystemConnectorConfig] = Field(default_factory=dict, description="folders by name")
    git: dict[str, GitConnectorConfig] = Field(default_factory=dict, description="git repositories by name")
    script: dict[str, ScriptConnectorConfig] = Field(default_factory=dict, description="Lua connectors by name")
    s3: dict[str, S3ConnectorConfig] = Field(default_factory=dict, description="S3 buckets by name (the s3 extra)")

    @model_validator(mode="after")
    def _extension_tables(self) -> ConnectorsConfig:
        for type_name, entries in (self.model_extra or {}).items():
            if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
                raise ValueError(f"{type_name}: expected tables [connectors.{type_name}.NAME] (a connector type "
                                 "from an installed extension)")
        return self

    def extension_tables(self) -> dict[str, dict[str, dict[str, Any]]]:
        """``{type: {name: table}}`` for connector types that are not built in."""
        return dict(self.model_extra or {})

    def languages(self) -> dict[str, str]:
        """``{source label: language}`` of the built-in sources whose ``language`` is set (not "auto")."""
        tables: dict[str, dict[str, _Language]] = {"filesystem": dict(self.filesystem), "git": dict(self.git),
                                                   "s3": dict(self.s3), "script": dict(self.script)}
        return {f"{kind}:{name}": entry.language for kind, entries in tables.items()
                for name, entry in entries.items() if entry.language != analysis.AUTO}


class ToolsConfig(_Section):
    """``[tools]``: user tools; ``[tools.script.NAME]`` is a Lua tool named NAME."""

    script: dict[str, ScriptConfig] = Field(default_factory=dict, description="Lua tools by name")


class LuaConfig(_Section):
    """``[lua]``: what every Lua script (tool, connector, agent) may reach, and how many calls run at once."""

    http_allow: list[str] | None = Field(default=None, description='where http.* may connect: "*" (any public '
                                         'address), names, "*.domain", IPs or CIDR ranges, each with an optional '
                                         ':port; unset: ["*"]; []: nowhere')
    env_allow: list[str] = Field(default_factory=list, description="environment variables every script may read")
    max_response_bytes: int = Field(default=10_000_000, ge=1024, description="cap on an HTTP response body read by "
                                    "Lua")
    max_calls_per_tool: int = Field(default=2, ge=1, le=8,  # one Lua tool's calls running at once
                                    description="calls of one Lua tool that run at once")
    max_queued_per_tool: int = Field(default=16, ge=0, le=10_000,  # waiting for those; past this: `busy`
                                     description="calls of one Lua tool that wait for those; one more answers busy")


class ModelConfig(_Section):
    """``[models.NAME]``: a chat model at an OpenAI-compatible endpoint that ``ctx agent run`` drives."""

    url: str = Field(pattern=r"^https?://\S+$", description='the base URL, e.g. "http://127.0.0.1:11434/v1" (Ollama)')
    model: str = Field(min_length=1, description='the model name the endpoint knows, e.g. "qwen2.5:7b"')
    api_key: str | None = Field(default=None, description='a Bearer token, e.g. "${OPENAI_API_KEY}"; never recorded')
    timeout: float = Field(default=120.0, gt=0, le=3600, description="seconds one model reply may take")
    max_response_bytes: int = Field(default=4_000_000, ge=1024, description="bytes of one reply; more ends the run")
    max_tokens: int | None = Field(default=None, ge=1, description="sent as max_tokens (per reply)")
    temperature: float | None = Field(default=None, ge=0, le=2, description="sent as temperature")
    max_steps: int = Field(default=20, ge=1, le=1000, description="model replies a run may take")
    max_seconds: float = Field(default=600.0, gt=0, le=86_400, description="seconds a run may take in all")
    max_run_tokens: int = Field(default=200_000, ge=1, description="prompt + completion tokens a run may spend")


class RegistryConfig(_Section):
    """``[registries.NAME]``: an extension registry (a git repository with ``registry.toml``) whose
    connectors, tools and agents ``ctx registry`` lists and installs; scripts from it run with only the
    capabilities its manifest declares."""

    url: str = Field(description="the registry: an https, ssh, git or file URL, user@host:path, or a local path (a "
                     "repository, or a folder inside one) relative to the config file")
    readonly: bool = Field(default=True, description="never push to or edit the registry's copy (to change an "
                           "extension, `ctx registry override ID` copies it into the project's .ctx/)")
    auto_update: bool = Field(default=False, description="apply `ctx registry update` without --accept when the "
                              "update asks for no new capability, host or environment variable")
    tier: Literal["personal", "company", "community"] = Field(
        default="community", description="precedence between registries: personal over company over community "
        "(explicit config and the project's .ctx/ win over all three); within a tier, config order")


class RegistriesConfig(BaseModel):
    """``[registries]``: extension registries, each a ``[registries.NAME]`` table (``ctx registry init``
    adds the starter one as ``community``)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, RegistryConfig] = Field(init=False)

    def named(self) -> dict[str, RegistryConfig]:
        """The registries by name, in config order."""
        return dict(self.model_extra or {})


class Config(_Section):
    db: DbConfig = Field(default_factory=DbConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    formats: FormatsConfig = Field(default_factory=FormatsConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    ui: UiConfig = Field(default_factory=UiConfig)
    connectors: ConnectorsConfig = Field(default_factory=ConnectorsConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    lua: LuaConfig = Field(default_factory=LuaConfig)
    agents: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, ModelConfig] = Field(default_factory=dict, description="chat models for `ctx agent run`")
    registries: RegistriesConfig = Field(default_factory=RegistriesConfig)
    hooks: HooksConfig = Field(default_factory=HooksConfig)

    # Not part of the file: where it came from, and the components left out for unset variables.
    source_path: Path | None = Field(default=None, exclude=True)
    unavailable: list[Unavailable] = Field(default_factory=list, exclude=True)
    # Set by ``registries.apply``: done once; where each registry or project extension came from.
    registries_applied: bool = Field(default=False, exclude=True)
    extension_origins: dict[str, str] = Field(default_factory=dict, exclude=True)

    @model_validator(mode="after")
    def _ocr_globs(self) -> Config:
        """With ``[formats] ocr``, pictures join the default globs of the sources that set none."""
        if self.formats.ocr:
            for table in (self.connectors.filesystem, self.connectors.git, self.connectors.s3):
                for source in table.values():
                    if "include_globs" not in source.model_fields_set:
                        source.include_globs = [*source.include_globs, *(
                            glob for glob in IMAGE_INCLUDE_GLOBS if glob not in source.include_globs)]
        return self

    @property
    def base_dir(self) -> Path:
        return self.source_path.parent if self.source_path else Path.cwd()

    @property
    def data_dir(self) -> Path:
        return self.db.path.parent

    def require_http(self) -> None:
        """``ConfigError`` naming the key and the variable when a key only the HTTP transport reads
        uses an unset variable (stdio and the CLI serve such a config; ``ctx serve --http`` does not)."""
        problem = http_unavailable(self.unavailable)
        if problem is not None:
            raise ConfigError(f"{self.source_path or '<config>'}: {problem}")


def discover(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """Find the config file, or raise ``ConfigError`` listing every place looked at."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        return path.resolve()
    env_path = os.environ.get(CONFIG_ENV)
    if env_path:
        path = Path(env_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"${CONFIG_ENV} points to {path}, which does not exist")
        return path.resolve()
    here = cwd or Path.cwd()
    candidates = [here / ".ctx" / "config.toml", here / "ctx.toml", user_config_file()]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    looked = ", ".join(str(c) for c in candidates)
    raise ConfigError(f"no config file found (looked at {looked}); run `ctx init` or pass --config FILE")


def user_config_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "context-harness" / "config.toml"


def user_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "context-harness"


def load(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Config:
    return load_file(discover(explicit, cwd))


def load_file(path: Path) -> Config:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table (a cloned .ctx/config.toml)
        raise ConfigError(f"{path}: invalid TOML: arrays or inline tables nested too deeply") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc.__class__.__name__}") from None
    return from_dict(raw, path)


def from_dict(raw: dict[str, Any], path: Path | None) -> Config:
    label = str(path) if path else "<config>"
    for reserved in ("source_path", "unavailable", "registries_applied", "extension_origins"):
        if reserved in raw:
            raise ConfigError(f"{label}: {reserved}: unknown key (check the spelling; {REFERENCE})")
    raw, unavailable = set_aside(raw)
    try:
        expanded = expand_vars(raw, "")
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc.message}") from None
    redaction.remember(raw, expanded)  # before anything can echo a value (validation errors do)
    try:
        config = Config.model_validate(expanded)
    except ValidationError as exc:
        raise ConfigError(f"{label}: {describe_validation_error(exc, Config)}") from None
    config.source_path = path.resolve() if path else None
    config.unavailable = unavailable
    return resolve_paths(config)


def resolve_paths(config: Config) -> Config:
    base = config.base_dir

    def absolute(p: Path) -> Path:
        p = p.expanduser()
        return p if p.is_absolute() else (base / p).resolve()

    config.db.path = absolute(config.db.path)
    if config.embedding.model_path is not None:
        config.embedding.model_path = absolute(config.embedding.model_path)
    for fs in config.connectors.filesystem.values():
        fs.root = absolute(fs.root)
    for group in (config.connectors.script, config.tools.script):
        for script in group.values():
            script.path = absolute(script.path)
    return config


def for_root(root: Path) -> Config:
    """Zero-config use (``--root DIR``): index DIR; keep the workspace in the user data dir."""
    root = root.expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(f"--root {root} is not a folder")
    key = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    workspace = user_data_dir() / "roots" / f"{root.name or 'root'}-{key}"
    return from_dict(
        {
            "db": {"path": str(workspace / "ctx.sqlite")},
            "connectors": {"filesystem": {root.name or "root": {"root": str(root)}}},
        },
        None,
    )
