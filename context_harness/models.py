"""Pydantic models at the edges.

These models are the single definition of what crosses an adapter: they give the MCP input and
output schemas, the REST bodies and the ``--json`` CLI output, so the three cannot drift.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from context_harness.common import timestamps

_BARE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

SearchMode = Literal["keyword", "semantic", "hybrid"]
MAX_GET_CHARS = 1_000_000  # the most characters of body one `get` returns; max_chars = 0 (the whole document) too
SECTION_CHARS = 6_000  # the most characters of a chunk's section one `get {id, chunk}` returns by default
MIN_MAX_TOKENS, MAX_MAX_TOKENS = 300, 1_000_000  # the bounds of `max_tokens` (search/budget.py)
MaxTokens = Annotated[int | None, Field(ge=MIN_MAX_TOKENS, le=MAX_MAX_TOKENS, description="Fit the whole answer in "
                                        "this many tokens (estimated); 'omitted' says what was left out.")]


class SearchFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str | None = Field(
        default=None,
        description="Only this source: a label ('filesystem:docs') or a connector type ('git').",
    )
    tags: list[str] | None = Field(
        default=None, description="Only documents carrying at least one of these tags."
    )
    since: str | None = Field(
        default=None, description="Only documents dated (own date, else last update) at or after this ISO "
        "8601 date/time; either filter turns off reading time words in the query."
    )
    until: str | None = Field(
        default=None, description="Only documents dated at or before this ISO 8601 date/time (a bare date: to "
        "the end of that day, UTC)."
    )
    symbol: str | None = Field(
        default=None, min_length=1, max_length=500,
        description="Only code defining this symbol (a path or its end: 'Harness.open', 'open_stores')."
    )

    @field_validator("since", "until")
    @classmethod
    def _check_time(cls, value: str | None) -> str | None:
        if value is not None:
            timestamps.parse(value)
        return value

    @field_validator("until")
    @classmethod
    def _whole_day(cls, value: str | None) -> str | None:
        """``until`` a bare date means to the end of that day, not its first instant."""
        if value is not None and _BARE_DATE.fullmatch(value.strip()):
            return f"{value.strip()}T23:59:59Z"
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
        description="What to look for, in plain words; quote a phrase (\"like this\") to require it verbatim."
    )
    mode: SearchMode | None = Field(
        default=None,
        description="'keyword' (exact words, names), 'semantic' (meaning) or 'hybrid' (both). Omit for the "
        "server's default.",
    )
    limit: int | None = Field(
        default=None, ge=1, le=100, description="Most documents to return (1-100)."
    )
    filters: SearchFilters | None = Field(default=None, description="Filters applied before ranking.")
    source: str | None = Field(
        default=None, description="Shorthand for filters.source.", json_schema_extra={"deprecated": False}
    )
    explain: bool = Field(default=False, description="Add per-result scoring details.")
    max_tokens: MaxTokens = None

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
    rerank_score: float | None = None
    chunk_index: int | None = None
    notes: list[str] = Field(default_factory=list)


class SearchResult(BaseModel):
    id: str = Field(description="Document id; pass it to 'get' (with 'chunk') to read the document.")
    score: float
    title: str | None
    source: str
    source_id: str
    updated_at: str | None
    date: str | None = Field(default=None, exclude_if=lambda v: v is None, description="The document's own date.")
    snippet: str
    source_url: str | None
    chunk: int | None = Field(
        default=None, description="Index of the chunk (section) the snippet comes from; pass it to 'get' as "
        "'chunk' to read that section.")
    heading: str | None = Field(
        default=None, description="Heading path of that chunk, joined with ' > ' (null when it has none).")
    version: str | None = Field(
        default=None, description="The document's stored content hash; pass it as 'expected_version' to the "
        "note tools.")
    explain: SearchExplain | None = Field(default=None, exclude_if=lambda v: v is None)


class SearchCoverage(BaseModel):
    """With ``explain``: how the search ran and how much of the index semantic search could see."""

    mode: str = Field(description="The mode the search ran in ('auto' resolves to hybrid or keyword).")
    chunks: int = Field(description="Chunks in the index.")
    embedded_chunks: int = Field(description="Chunks with a vector: semantic and hybrid search see only these "
                                 "(the rest are found by keyword until `ctx embed pending` or the server embeds "
                                 "them).")
    embedder: str | None = Field(default=None, description="The embedder whose vectors semantic search used: "
                                 "during a model switch the stored vectors' own, not yet the configured one; None "
                                 "when the search used keyword only.")
    switch: str | None = Field(default=None, description="A model switch under way: 're-embedding for MODEL: "
                               "1,234 of 5,183 chunks' (searches use the stored vectors until it completes).")


class IndexingProgress(BaseModel):
    """With a search answered while the first sync of some sources runs: how far it is."""

    sources: list[str] = Field(description="The sources being indexed for the first time.")
    phase: Literal["scanning", "indexing"] = Field(description="'scanning' the source for items, then "
                                                   "'indexing' them (done of total).")
    done: int = Field(description="Items indexed so far.")
    total: int = Field(description="Items found by the scan (0 while scanning).")


class Omitted(BaseModel):
    """What max_tokens left out (only what was cut)."""

    results: int | None = Field(default=None, exclude_if=lambda v: v is None, description="Results left out.")
    snippet_chars: int | None = Field(default=None, exclude_if=lambda v: v is None)
    fields: list[str] | None = Field(default=None, exclude_if=lambda v: v is None, description="Fields emptied.")
    body_chars: int | None = Field(default=None, exclude_if=lambda v: v is None, description="Characters cut.")


class SearchResponse(BaseModel):
    results: list[SearchResult]
    explain: SearchCoverage | None = Field(default=None, exclude_if=lambda v: v is None)
    notice: str | None = Field(default=None, exclude_if=lambda v: v is None, description="Why the results may "
                               "be incomplete: a first sync still running, or a knowledge base never synced.")
    indexing: IndexingProgress | None = Field(default=None, exclude_if=lambda v: v is None)
    omitted: Omitted | None = Field(default=None, exclude_if=lambda v: v is None)


class GetRequest(BaseModel):
    """Arguments of the ``get`` tool, the body of ``POST /tools/get`` and ``ctx get``."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        description="A document id returned by 'search'."
    )
    chunk: int | None = Field(
        default=None, description="Read the section of this chunk (a search result's 'chunk'): from its heading "
        f"to the next heading of the same or a higher level, at most max_chars (default {SECTION_CHARS:,}), centred "
        "on the chunk. Not with 'offset'.")
    offset: int | None = Field(
        default=None, description="Read from this character offset of the body (a previous answer's "
        "'next_offset'). Default 0.")
    max_chars: int | None = Field(
        default=None, description=f"Most characters of body to return, at most {MAX_GET_CHARS:,} (0: the whole "
        f"document, or section, up to that). Default: {SECTION_CHARS:,} for a chunk's section, else the server's "
        "get_max_chars.")
    max_tokens: MaxTokens = None

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
    version: str | None = Field(
        default=None, description="The stored content hash; pass it as 'expected_version' to the note tools.")
    omitted: Omitted | None = Field(default=None, exclude_if=lambda v: v is None)


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


class SourceOverlap(BaseModel):
    """Two sources whose folders overlap (one inside the other, or the same): every file there is
    indexed through both."""

    sources: list[str] = Field(description="The two sources: the one whose copy of a file search lists (the "
                               "deeper folder, or of the same folder the one declared first), then the other.")
    folder: str = Field(description="The folder both index: the first source's.")
    message: str = Field(description="What happens and the fix, in words.")


class SourcesResponse(BaseModel):
    sources: list[SourceOut]
    overlaps: list[SourceOverlap] = Field(
        default_factory=list, description="Sources whose folders overlap, so that their files are indexed twice "
        "(search lists each once); each with the fix. Empty when none do.")
    embedding: dict[str, Any] = Field(default_factory=dict)
    set_aside: list[dict[str, Any]] = Field(
        default_factory=list, description="Parts of the config set aside because an environment variable they "
        "use is not set, other than sources (listed above as failing): Lua tools, agents, HTTP serving; each "
        "{kind, name, key_path, variables, message}.")


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
    set_aside: dict[str, str] = Field(
        default_factory=dict, description="Sources `sync all` passed by because they cannot run (an environment "
        "variable not set, a script that does not load), each with why; `ctx sync` exits 1 when there is any.")
    embedding: EmbedSummary | None = None
    overlaps: list[SourceOverlap] = Field(
        default_factory=list, description="Sources whose folders overlap (as in `sources`), each with the fix.")
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


class RecentRequest(BaseModel):
    """Arguments of the ``recent`` tool and ``ctx recent``."""

    model_config = ConfigDict(extra="forbid")

    since: str | None = Field(default=None, description="Only changes at or after this time: an ISO 8601 date "
                              "or date-time, or a duration back from now (30m, 12h, 7d, 2w). Omit for the "
                              "newest changes.")
    source: str | None = Field(default=None, description="Only this source (a label such as 'filesystem:docs', "
                               "or a connector type).")
    limit: int = Field(default=20, ge=1, le=200, description="Most changes to return (1-200).")


class RecentChange(BaseModel):
    id: str = Field(description="The document id (for 'get' and 'related'; a deleted one is gone).")
    source: str
    source_id: str
    title: str | None = None
    change: Literal["added", "updated", "deleted"]
    at: str = Field(description="When the index saw the change (UTC).")


class RecentResponse(BaseModel):
    changes: list[RecentChange]


class RelatedRequest(BaseModel):
    """Arguments of the ``related`` tool and ``ctx related``."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(min_length=1, max_length=200)] = Field(description="A document id (from 'search', "
                                                                    "'get' or 'recent').")
    limit: int = Field(default=10, ge=1, le=100, description="Most documents per list (1-100).")


class RelatedItem(BaseModel):
    id: str
    title: str | None = None
    source: str
    source_id: str
    why: Literal["links_to", "linked_from", "similar"] = Field(
        description="links_to: the document links to it; linked_from: it links to the document; similar: "
        "nearest by meaning.")
    link: str | None = Field(default=None, description="The link as written (for links_to and linked_from).")
    score: float | None = Field(default=None, description="Cosine similarity (for similar).")


class UnresolvedLink(BaseModel):
    kind: Literal["markdown", "wiki"]
    target: str = Field(description="The link as written; no indexed document matches it.")


class RelatedResponse(BaseModel):
    id: str
    title: str | None = None
    links_to: list[RelatedItem]
    linked_from: list[RelatedItem]
    similar: list[RelatedItem]
    unresolved: list[UnresolvedLink]
    note: str | None = Field(default=None, description="Why 'similar' is empty, when it is (embeddings "
                             "disabled or not computed yet).")


# -- the note tools (writable sources) ------------------------------------------------------------

DocId = Annotated[str, Field(min_length=1, max_length=200)]
RelPath = Annotated[str, Field(min_length=1, max_length=1024)]
Version = Annotated[str, Field(min_length=1, max_length=128)]
EditOp = Literal["append", "prepend", "replace_section", "find_replace"]


class NoteWriteRequest(BaseModel):
    """Arguments of ``note_write``."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1, description="A writable source: its name ('notes') or label "
                        "('filesystem:notes').")
    path: RelPath = Field(description="Where in the source, relative to its folder, ending in .md "
                          "(e.g. 'inbox/release.md'); missing folders are created.")
    content: str = Field(max_length=5_000_000, description="The note's Markdown text.")
    title: str | None = Field(default=None, max_length=500, description="Written as a '# Title' line (or front "
                              "matter when the source sets front_matter = true).")
    tags: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        default=None, max_length=50, description="Written as a 'Tags:' line (or front matter).")
    overwrite: bool = Field(default=False, description="Replace an existing file; without it, one is refused.")


class NoteEditRequest(BaseModel):
    """Arguments of ``note_edit``: one change to an existing note, checked against the version read."""

    model_config = ConfigDict(extra="forbid")

    id: DocId = Field(description="The note's document id (from 'search', 'get' or 'recent').")
    op: EditOp = Field(description="append or prepend 'text'; replace_section: the body under 'heading' "
                       "becomes 'text'; find_replace: 'find' -> 'replace', exactly 'count' times.")
    expected_version: Version = Field(description="The 'version' that 'get' or 'search' returned: a note changed "
                                      "since is refused with a conflict naming both versions.")
    text: str | None = Field(default=None, max_length=5_000_000, description="For append, prepend and "
                             "replace_section.")
    heading: str | None = Field(default=None, max_length=1000, description="For replace_section: the heading "
                                "text, or a heading path 'Parent > Child'.")
    find: str | None = Field(default=None, min_length=1, max_length=100_000, description="For find_replace.")
    replace: str | None = Field(default=None, max_length=5_000_000, description="For find_replace.")
    count: int = Field(default=1, ge=1, le=10_000, description="For find_replace: how many occurrences there "
                       "must be (all are replaced).")


class NoteMoveRequest(BaseModel):
    """Arguments of ``note_move``: a new path in the same source."""

    model_config = ConfigDict(extra="forbid")

    id: DocId = Field(description="The note's document id.")
    to: RelPath = Field(description="The new path, relative to the source's folder, ending in .md; an existing "
                        "file there is refused.")
    expected_version: Version | None = Field(default=None, description="If given, a note changed since is "
                                             "refused with a conflict.")


class NoteDeleteRequest(BaseModel):
    """Arguments of ``note_delete``: into the workspace's trash, restorable."""

    model_config = ConfigDict(extra="forbid")

    id: DocId = Field(description="The note's document id.")
    expected_version: Version | None = Field(default=None, description="If given, a note changed since is "
                                             "refused with a conflict.")


class NoteRestoreRequest(BaseModel):
    """Arguments of ``note_restore``: a deleted note back from the trash, where it was."""

    model_config = ConfigDict(extra="forbid")

    trash_id: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        default=None, description="The 'trash_id' that note_delete returned.")
    path: RelPath | None = Field(default=None, description="Or the note's path: its latest deletion is restored.")

    @model_validator(mode="after")
    def _one_of(self) -> NoteRestoreRequest:
        if (self.trash_id is None) == (self.path is None):
            raise ValueError("give trash_id (from note_delete) or path, not both")
        return self


class NoteResult(BaseModel):
    """What a note tool did."""

    id: str = Field(description="The note's document id (after a move: the new one).")
    source: str
    path: str = Field(description="The note's path in the source (after a move: the new one).")
    version: str | None = Field(description="Its version now (null once deleted): the next edit's "
                                "expected_version.")
    action: Literal["written", "edited", "moved", "deleted", "restored"]
    trash_id: str | None = Field(default=None, description="For a deletion: the trash entry; "
                                 "`ctx note restore TRASH_ID` puts the note back.")
    note: str | None = Field(default=None, description="Set when the note is saved but not indexed (the "
                             "source's globs leave it out).")


class TrashEntryOut(BaseModel):
    id: str
    source: str
    path: str
    deleted_at: str
    version: str | None = None
