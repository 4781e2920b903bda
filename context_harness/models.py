"""Pydantic models at the edges.

These models are the single definition of what crosses an adapter: they give the MCP input and
output schemas, the REST bodies and the ``--json`` CLI output, so the three cannot drift.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from context_harness import timestamps

SearchMode = Literal["keyword", "semantic", "hybrid"]
MAX_GET_CHARS = 1_000_000  # the largest window `get` returns on request; max_chars = 0 returns everything


class SearchFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str | None = Field(
        default=None,
        description="Only documents from this source: a full label such as 'filesystem:docs' or a "
        "connector type such as 'filesystem', 'git' or 'script'.",
    )
    tags: list[str] | None = Field(
        default=None, description="Only documents carrying at least one of these tags."
    )
    since: str | None = Field(
        default=None, description="Only documents updated at or after this ISO 8601 date/time."
    )
    until: str | None = Field(
        default=None, description="Only documents updated at or before this ISO 8601 date/time."
    )

    @field_validator("since", "until")
    @classmethod
    def _check_time(cls, value: str | None) -> str | None:
        if value is not None:
            timestamps.parse(value)
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _tags_from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [t.strip() for t in value.split(",") if t.strip()]
        return value


class SearchRequest(BaseModel):
    """Arguments of the ``search`` tool, the body of ``POST /tools/search`` and ``ctx search``."""

    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, Field(min_length=1, max_length=20_000)] = Field(
        description="What to look for, in plain words. Quote a phrase (\"like this\") to require it verbatim; "
        "every other word is optional and ranks results higher when it matches."
    )
    mode: SearchMode | None = Field(
        default=None,
        description="'keyword' (exact words, names, identifiers), 'semantic' (meaning, paraphrases) or "
        "'hybrid' (both, best default). Omit to use the server's default.",
    )
    limit: int | None = Field(
        default=None, ge=1, le=100, description="Maximum number of documents to return (1-100)."
    )
    filters: SearchFilters | None = Field(default=None, description="Optional filters applied before ranking.")
    source: str | None = Field(
        default=None, description="Shorthand for filters.source.", json_schema_extra={"deprecated": False}
    )
    explain: bool = Field(default=False, description="Add per-result scoring details.")

    @model_validator(mode="after")
    def _merge_source(self) -> SearchRequest:
        if self.source is not None:
            filters = self.filters or SearchFilters()
            if filters.source is None:
                self.filters = filters.model_copy(update={"source": self.source})
            self.source = None
        if not self.query.strip():
            raise ValueError("query must contain at least one non-space character")
        return self


class SearchExplain(BaseModel):
    keyword_score: float | None = None
    keyword_rank: int | None = None
    semantic_score: float | None = None
    semantic_rank: int | None = None
    fused_score: float | None = None
    chunk_index: int | None = None
    notes: list[str] = Field(default_factory=list)


class SearchResult(BaseModel):
    id: str = Field(description="Document id; pass it to 'get' (with 'chunk') to read the document.")
    score: float
    title: str | None
    source: str
    source_id: str
    updated_at: str | None
    snippet: str
    source_url: str | None
    chunk: int | None = Field(
        default=None, description="Index of the chunk (section) the snippet comes from; pass it to 'get' as "
        "'chunk' to read that section.")
    heading: str | None = Field(
        default=None, description="Heading path of that chunk, joined with ' > ' (null when it has none).")
    explain: SearchExplain | None = Field(default=None, exclude_if=lambda v: v is None)


class SearchCoverage(BaseModel):
    """With ``explain``: how the search ran and how much of the index semantic search could see."""

    mode: str = Field(description="The mode the search ran in ('auto' resolves to hybrid or keyword).")
    chunks: int = Field(description="Chunks in the index.")
    embedded_chunks: int = Field(description="Chunks with a vector: semantic and hybrid search see only these "
                                 "(the rest are found by keyword until `ctx embed pending` or the server embeds "
                                 "them).")


class IndexingProgress(BaseModel):
    """With a search answered while the first sync of some sources runs: how far it is."""

    sources: list[str] = Field(description="The sources being indexed for the first time.")
    phase: Literal["scanning", "indexing"] = Field(description="'scanning' the source for items, then "
                                                   "'indexing' them (done of total).")
    done: int = Field(description="Items indexed so far.")
    total: int = Field(description="Items found by the scan (0 while scanning).")


class SearchResponse(BaseModel):
    results: list[SearchResult]
    explain: SearchCoverage | None = Field(default=None, exclude_if=lambda v: v is None)
    notice: str | None = Field(default=None, exclude_if=lambda v: v is None, description="Why the results may "
                               "be incomplete: a first sync still running, or a knowledge base never synced.")
    indexing: IndexingProgress | None = Field(default=None, exclude_if=lambda v: v is None)


class GetRequest(BaseModel):
    """Arguments of the ``get`` tool, the body of ``POST /tools/get`` and ``ctx get``."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        description="A document id returned by 'search'."
    )
    chunk: int | None = Field(
        default=None, description="Return this chunk (a search result's 'chunk') with its neighbouring "
        "chunks, up to max_chars. Not together with 'offset'.")
    offset: int | None = Field(
        default=None, description="Return the text from this character offset of the body (a previous "
        "response's 'next_offset'). Default 0.")
    max_chars: int | None = Field(
        default=None, description=f"Most characters of body to return (at most {MAX_GET_CHARS:,}); 0 returns "
        "the whole document. Omit for the server's default (about 20,000).")

    @field_validator("chunk", "offset")
    @classmethod
    def _not_negative(cls, value: int | None, info: Any) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"{info.field_name} must be 0 or more")
        return value

    @field_validator("max_chars")
    @classmethod
    def _budget(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= MAX_GET_CHARS:
            raise ValueError(f"max_chars must be between 0 (the whole document) and {MAX_GET_CHARS}")
        return value

    @model_validator(mode="after")
    def _one_position(self) -> GetRequest:
        if self.chunk is not None and self.offset is not None:
            raise ValueError("give either 'chunk' or 'offset', not both")
        return self


class NoArguments(BaseModel):
    """The arguments of a tool that takes none (``sources``, ``agent_list``)."""

    model_config = ConfigDict(extra="forbid")


class ChunkOut(BaseModel):
    index: int
    text: str = Field(description="The chunk's text; empty when the response is a window (the window's "
                      "text is 'body', and start/end say where the chunk lies in the document).")
    heading: str | None = Field(default=None, description="The chunk's heading path, joined with ' > '.")
    start: int | None = Field(default=None, description="Where the chunk begins in the full body (characters).")
    end: int | None = Field(default=None, description="Where the chunk ends in the full body (exclusive).")


class TextRange(BaseModel):
    start: int
    end: int


class DocumentOut(BaseModel):
    id: str
    source: str
    source_id: str
    source_url: str | None
    title: str | None
    author: str | None
    created_at: str | None
    updated_at: str | None
    content_type: str
    body: str = Field(description="The document's text, or the window of it that 'range' names.")
    metadata: dict[str, Any]
    chunks: list[ChunkOut] = Field(description="The chunks overlapping the returned text.")
    truncated: bool = Field(default=False, description="True when 'body' is not the whole document.")
    range: TextRange | None = Field(
        default=None, description="The character offsets of 'body' in the full body (end exclusive).")
    total_chars: int | None = Field(default=None, description="Length of the full body, in characters.")
    next_offset: int | None = Field(
        default=None, description="Pass as 'offset' to read on; null when the text reaches the end.")


class DocumentEntry(BaseModel):
    id: str
    title: str | None
    source: str
    updated_at: str | None


class DocumentListing(BaseModel):
    documents: list[DocumentEntry]
    next_cursor: str | None = Field(default=None, description="Pass as 'cursor' for the next page; null at the end.")


class SourceOut(BaseModel):
    name: str
    configured: bool
    healthy: bool
    notes: str | None
    document_count: int
    chunk_count: int
    last_sync: str | None
    embedded_chunks: int = 0
    pending_chunks: int = Field(default=0, description="Chunks of this source not embedded yet.")
    watch: Literal["watched", "polled", "interval", "off"] | None = Field(
        default=None, description="How a serving process keeps this source fresh: 'watched' (file-system "
        "events), 'polled' (periodic scans, because watching failed: see watch_note), 'interval' (a sync "
        "every sync_interval) or 'off'; null when this process is not serving.")
    watch_note: str | None = Field(default=None, description="Why the source is polled instead of watched.")
    origin: str | None = Field(default=None, description="Where a Lua connector's script came from: "
                               "'registry NAME at COMMIT' or 'project .ctx/'; null for the user's own scripts.")
    syncing: bool = Field(default=False, description="A sync of this source is running in this process.")
    last_outcome: Literal["ok", "error"] | None = Field(
        default=None, description="How this process's last sync of the source ended (null: none yet).")
    last_error: str | None = Field(default=None, description="What went wrong, when last_outcome is 'error'.")
    sync_passes: int = Field(default=0, description="Syncs of this source committed by this process "
                             "(whole-source and live path syncs).")
    status: Literal["ok", "degraded", "failing"] = Field(
        default="ok", description="'ok'; 'degraded': it works, but not fully (the last sync skipped items for "
        "errors, the last live update failed after earlier syncs worked, or it is polled because watching "
        "failed); 'failing': its last sync failed, its root is missing or it is unavailable. 'healthy' is "
        "false exactly when this is 'failing'.")
    status_reason: str | None = Field(default=None, description="Why the status is not 'ok'.")


def live_state(source: dict[str, Any]) -> str:
    """How a serving process keeps the source fresh, and its last sync there ("" when not serving)."""
    parts = []
    note = source.get("watch_note")
    if note and note in (source.get("status_reason") or ""):
        note = None  # said already, with the status
    if source.get("watch"):
        parts.append(source["watch"] + (f": {note}" if note else ""))
    if source.get("syncing"):
        parts.append("syncing now")
    if source.get("last_outcome") == "error":
        parts.append(f"last sync failed: {source.get('last_error')}")
    return f"; {'; '.join(parts)}" if parts else ""


class SourcesResponse(BaseModel):
    sources: list[SourceOut]
    embedding: dict[str, Any] = Field(default_factory=dict)


class SkippedItem(BaseModel):
    source_id: str
    reason: str = Field(description="Why it was skipped: too_large, binary, encrypted, corrupt, no_text, ...")


class SyncSummary(BaseModel):
    source: str
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    skipped_reasons: dict[str, int] = Field(default_factory=dict)
    skipped_items: list[SkippedItem] = Field(
        default_factory=list, description="The skipped items by name (the first 100), with their reasons.")
    limited: bool = False
    dry_run: bool = False
    seconds: float = 0.0


class EmbedSummary(BaseModel):
    embedded: int
    pending: int
    seconds: float
    embedder: str


class CheckProblem(BaseModel):
    kind: str = Field(description="sqlite, index_queue, keyword_missing, keyword_extra, keyword_duplicate, "
                      "stray_chunks, unchunked, orphan_vectors or keyword_damaged")
    message: str
    repaired: bool = False


class CheckReport(BaseModel):
    consistent: bool = Field(description="True when no problem is left (after repairs, with --repair).")
    documents: int
    chunks: int
    vectors: int
    problems: list[CheckProblem]


class MigrationReport(BaseModel):
    """``ctx db migrate --to postgres``: what was copied, and where to (no password)."""

    target: str
    documents: int
    chunks: int
    vectors: int
    embedder: str | None = Field(default=None, description="The identity of the copied vectors' embedder.")
    seconds: float


class SyncReport(BaseModel):
    sources: list[SyncSummary]
    embedding: EmbedSummary | None = None
    # The documents were synced but embedding their chunks failed ({"code", "message"}); they are
    # searchable by keyword and stay pending for `ctx embed pending`.
    embedding_error: dict[str, str] | None = None

    def total(self, field: str) -> int:
        return sum(getattr(s, field) for s in self.sources)


class StatsOut(BaseModel):
    documents: int
    chunks: int
    sources: int
    db_path: str
    db_bytes: int
    index_bytes: int
    schema_version: int
    last_sync: str | None
    embedding: dict[str, Any] = Field(default_factory=dict)
