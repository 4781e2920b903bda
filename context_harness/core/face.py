"""The core's face: all that the rims (``cli/``, ``server/``, ``console/``) use of the layers below.

A rim imports from this module and from the base layer (errors, config, models, ``common``), nothing
else; ``tests/test_architecture.py`` checks it. What the face offers, in named parts:

- **An open knowledge base**, ``Harness``: its lifecycle (``open``, ``serving``, ``subscribe`` ...) and
  nine parts, each a small interface below (``Searching``, ``Documents``, ``Sources``, ``Indexing``,
  ``Notes``, ``Tools``, ``Agents``, ``AgentFiles``, ``Runs``). ``Harness`` implements every part (mypy checks it
  in ``_parts``) and has no other public call (a test checks that each is in exactly one part). A rim
  that needs one part takes that part, not the whole ``Harness``.
- **Outside a workspace**: ``registries`` (the git extension registries of a config: ``ctx registry``),
  ``scripts`` (trying and starting Lua scripts: ``ctx tool test PATH``, ``ctx connector test``,
  ``ctx ... init``), ``agent_settings`` (where a config's agents come from), ``init_workspace``
  (``ctx init``), ``check_installed`` (``ctx check`` on a workspace that may not open),
  ``demo_config`` (the bundled sample) and ``prepare_server`` (what installed extension packages add
  to a server).
- **What the rims render**: the types and renderers below, re-exported from where they live.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # at run time each name is imported on first use (``__getattr__`` below): a command
    # that opens the knowledge base to search imports no agents, Lua, registries or tools (issue 50)
    from context_harness.agents.chat import ChatReply, OpenAIChat, ToolCall
    from context_harness.agents.editing import (
        CLAUDE_CODE_TOOLS,
        NEW_SKILL,
        AgentDraft,
        ArgumentRow,
        agent_text,
        check_draft,
        checked_text,
        draft_from_file,
    )
    from context_harness.agents.library import AGENT_SCHEME, SKILL_SCHEME
    from context_harness.agents.models import AgentInfo, AgentPrompt
    from context_harness.agents.render import prompt_get_messages
    from context_harness.agents.runs import RUN_CLIENT, Approval, Approver, ClientSide, RunRequest, StepListener
    from context_harness.agents.settings import load_settings as agent_settings
    from context_harness.agents.skills import SKILL_FILE, SKILL_NAME, Skill, parse_skill, skill_text
    from context_harness.config import Config, Unavailable
    from context_harness.connectors.base import Connector
    from context_harness.core import scripts
    from context_harness.core.authoring import AgentFile, AgentPreview
    from context_harness.core.catalog import AgentResolution, ToolResult
    from context_harness.core.harness import Harness
    from context_harness.core.recovery import check_installed
    from context_harness.core.reports import SourceDetail
    from context_harness.core.running import needs_approval, new_run_id
    from context_harness.core.workspace import init_workspace
    from context_harness.core.workspaces import WorkspaceSet
    from context_harness.core.writeback import CLIENT
    from context_harness.extensions import ServerSetup, prepare_server
    from context_harness.hooks import events as hook_events
    from context_harness.ingest.sync import DocumentChanges, ProgressFn
    from context_harness.models import (
        CheckReport,
        DocumentListing,
        DocumentOut,
        EmbedSummary,
        GetRequest,
        MigrationReport,
        NoteDeleteRequest,
        NoteEditRequest,
        NoteMoveRequest,
        NoteResult,
        NoteWriteRequest,
        RecentRequest,
        RecentResponse,
        RelatedRequest,
        RelatedResponse,
        SearchRequest,
        SearchResponse,
        SourcesResponse,
        StatsOut,
        SyncReport,
        SyncSummary,
        TrashEntryOut,
    )
    from context_harness.registries import service as registries
    from context_harness.registries.results import ExtensionRow
    from context_harness.sample import demo_config
    from context_harness.search.windows import Headings
    from context_harness.store.grants import AuthorizedClient, CodeRow, GrantStore, digest
    from context_harness.tools.base import SCOPES, Tool, hints, render_json, required_scope
    from context_harness.tools.notes import render_note


# -- the parts of an open knowledge base --------------------------------------------------------


class Searching(Protocol):
    """Keyword, semantic and hybrid search (``search``), and loading what a first search needs."""

    async def search(self, request: SearchRequest) -> SearchResponse: ...
    def search_sync(self, request: SearchRequest) -> SearchResponse: ...
    def warm_up(self) -> bool: ...
    def request_warm_up(self) -> None: ...


class Documents(Protocol):
    """Reading documents: a window of one, the listing, headings, and how they connect."""

    async def get(self, request: GetRequest | str) -> DocumentOut: ...
    def get_sync(self, doc_id: str, request: GetRequest | None = None) -> DocumentOut: ...
    async def document_headings(self, doc_id: str, around: int, reach: int) -> Headings: ...
    async def document_listing(self, cursor: str | None = None, limit: int = 100) -> DocumentListing: ...
    def document_listing_sync(self, cursor: str | None = None, limit: int = 100) -> DocumentListing: ...
    async def document_markdown(self, request: GetRequest, read_on: str) -> str: ...
    async def recent(self, request: RecentRequest) -> RecentResponse: ...
    def recent_sync(self, request: RecentRequest) -> RecentResponse: ...
    async def related(self, request: RelatedRequest) -> RelatedResponse: ...
    def related_sync(self, request: RelatedRequest) -> RelatedResponse: ...
    async def link_targets(self, doc_id: str) -> dict[tuple[str, str], str]: ...
    async def link_graph(self, doc_id: str | None = None, most: int = 300) -> dict[str, Any]: ...


class Sources(Protocol):
    """Where documents come from and how the knowledge base stands."""

    async def sources(self) -> SourcesResponse: ...
    def sources_sync(self) -> SourcesResponse: ...
    async def stats(self) -> StatsOut: ...
    def stats_sync(self) -> StatsOut: ...
    def embedding_status(self) -> dict[str, Any]: ...
    def embedding_now(self) -> bool: ...
    async def source_details(self) -> dict[str, SourceDetail]: ...
    async def sync_history(self, source: str | None = None, limit: int = 20) -> list[dict[str, Any]]: ...
    def describe(self) -> str: ...


class Indexing(Protocol):
    """Writing the index: sync, embed, check, migrate."""

    async def sync(self, target: str = "all", *, full: bool = False, dry_run: bool = False,
                   limit: int | None = None, progress: ProgressFn | None = None, embed: bool = True) -> SyncReport: ...
    async def sync_paths(self, label: str, rel_paths: list[str]) -> SyncSummary: ...
    async def embed(self, *, limit: int | None = None, batch_size: int | None = None, rebuild: bool = False,
                    progress: ProgressFn | None = None) -> EmbedSummary: ...
    async def embed_new(self) -> EmbedSummary | None: ...
    def select(self, target: str) -> list[Connector]: ...
    async def check(self, repair: bool = False) -> CheckReport: ...
    async def migrate_to_postgres(self, url: str) -> MigrationReport: ...
    def reconfigured_connectors(self, config: Config) -> list[Connector]: ...


class Notes(Protocol):
    """Write-back on writable folders: the note calls and the trash."""

    async def note_write(self, request: NoteWriteRequest) -> NoteResult: ...
    async def note_edit(self, request: NoteEditRequest) -> NoteResult: ...
    async def note_move(self, request: NoteMoveRequest) -> NoteResult: ...
    async def note_delete(self, request: NoteDeleteRequest) -> NoteResult: ...
    async def note_restore(self, entry_id: str | None = None, path: str | None = None) -> NoteResult: ...
    def trash_entries(self) -> list[TrashEntryOut]: ...
    def writable_sources(self) -> list[str]: ...


class Tools(Protocol):
    """The tools offered (built-in, write-back, Lua, agents' and extensions'), and calling one."""

    def tools(self, agent: str | None = None, profile: str | None = None) -> list[Tool]: ...
    def tool_listing(self, agent: str | None = None) -> dict[str, Any]: ...
    async def call_tool(self, name: str, arguments: Any, agent: str | None = None,
                        profile: str | None = None) -> ToolResult: ...
    async def try_tool(self, target: str, params: list[str]) -> dict[str, Any]: ...


class Agents(Protocol):
    """The agents offered: listing, resolving (prompt, tools, context), completions, resources."""

    def agents(self) -> list[AgentInfo]: ...
    def agent(self, name: str) -> AgentInfo: ...
    def unavailable_agents(self) -> list[Unavailable]: ...
    async def resolve_agent(self, name: str, arguments: dict[str, Any] | None = None) -> AgentResolution: ...
    def complete_agent_argument(self, agent: str, argument: str, prefix: str) -> list[str]: ...
    def agent_resources(self, cursor: str | None = None, numeric: bool = False) -> dict[str, Any]: ...
    def read_agent_resource(self, uri: str) -> str: ...


class AgentFiles(Protocol):
    """Agents and skills written as files (the console's agent builder)."""

    def agent_file(self, name: str) -> AgentFile | None: ...
    def agent_folder(self) -> Path | None: ...
    def agent_origins(self) -> dict[str, str]: ...
    def skill_folder(self) -> Path | None: ...
    def skills(self) -> list[Skill]: ...
    async def write_agent_file(self, path: Path, text: str, version: str | None) -> AgentFile | None: ...
    async def preview_agent_file(self, text: str, path: Path, arguments: dict[str, Any]) -> AgentPreview: ...
    async def write_skill(self, name: str, text: str) -> Path: ...
    async def zoo_inject(self, name: str, arguments: dict[str, Any], format: str) -> dict[str, Any]: ...


class Runs(Protocol):
    """An agent driven by a chat model through its tools (``ctx agent run``), and the runs' records."""

    async def run_agent(self, request: RunRequest, *, approver: Approver | None = None,
                        on_step: StepListener | None = None, model: Any = None,
                        fallback: Any = None) -> dict[str, Any]: ...
    async def start_agent_run(self, request: RunRequest, *, approver: Approver | None = None) -> str: ...
    async def agent_runs(self, limit: int = 50, agent: str | None = None) -> list[dict[str, Any]]: ...
    async def agent_run_record(self, run_id: str) -> dict[str, Any]: ...


PARTS: tuple[type, ...] = (Searching, Documents, Sources, Indexing, Notes, Tools, Agents, AgentFiles, Runs)
LIFECYCLE = ("open", "installed", "serving", "open_stores", "close", "semantic", "run_blocking", "writing",
             "subscribe", "subscribe_documents", "version", "catalog")
"""``Harness``'s own calls beside its parts: opening, serving, locks, worker threads, change listeners."""


def _parts(harness: Harness) -> tuple[Searching, Documents, Sources, Indexing, Notes, Tools, Agents, AgentFiles,
                                      Runs]:
    """Never called: mypy checks here that ``Harness`` implements every part."""
    return harness, harness, harness, harness, harness, harness, harness, harness, harness


# -- outside a workspace: ``registries`` (``registries/service.py``), ``scripts`` (``core/scripts.py``),
# ``init_workspace``, ``check_installed``, ``demo_config``; ``ServerSetup`` and ``prepare_server`` (imported above)

_LAZY: dict[str, tuple[str, str | None]] = {  # name: (module, attribute; None: the module itself)
    "ChatReply": ("context_harness.agents.chat", "ChatReply"),
    "ToolCall": ("context_harness.agents.chat", "ToolCall"),
    "OpenAIChat": ("context_harness.agents.chat", "OpenAIChat"),
    "CLAUDE_CODE_TOOLS": ("context_harness.agents.editing", "CLAUDE_CODE_TOOLS"),
    "NEW_SKILL": ("context_harness.agents.editing", "NEW_SKILL"),
    "AgentDraft": ("context_harness.agents.editing", "AgentDraft"),
    "ArgumentRow": ("context_harness.agents.editing", "ArgumentRow"),
    "agent_text": ("context_harness.agents.editing", "agent_text"),
    "check_draft": ("context_harness.agents.editing", "check_draft"),
    "checked_text": ("context_harness.agents.editing", "checked_text"),
    "draft_from_file": ("context_harness.agents.editing", "draft_from_file"),
    "AGENT_SCHEME": ("context_harness.agents.library", "AGENT_SCHEME"),
    "SKILL_SCHEME": ("context_harness.agents.library", "SKILL_SCHEME"),
    "AgentInfo": ("context_harness.agents.models", "AgentInfo"),
    "AgentPrompt": ("context_harness.agents.models", "AgentPrompt"),
    "prompt_get_messages": ("context_harness.agents.render", "prompt_get_messages"),
    "RUN_CLIENT": ("context_harness.agents.runs", "RUN_CLIENT"),
    "Approval": ("context_harness.agents.runs", "Approval"),
    "Approver": ("context_harness.agents.runs", "Approver"),
    "ClientSide": ("context_harness.agents.runs", "ClientSide"),
    "RunRequest": ("context_harness.agents.runs", "RunRequest"),
    "StepListener": ("context_harness.agents.runs", "StepListener"),
    "agent_settings": ("context_harness.agents.settings", "load_settings"),
    "SKILL_FILE": ("context_harness.agents.skills", "SKILL_FILE"),
    "SKILL_NAME": ("context_harness.agents.skills", "SKILL_NAME"),
    "Skill": ("context_harness.agents.skills", "Skill"),
    "parse_skill": ("context_harness.agents.skills", "parse_skill"),
    "skill_text": ("context_harness.agents.skills", "skill_text"),
    "Config": ("context_harness.config", "Config"),
    "Unavailable": ("context_harness.config", "Unavailable"),
    "Connector": ("context_harness.connectors.base", "Connector"),
    "scripts": ("context_harness.core.scripts", None),
    "AgentFile": ("context_harness.core.authoring", "AgentFile"),
    "AgentPreview": ("context_harness.core.authoring", "AgentPreview"),
    "AgentResolution": ("context_harness.core.catalog", "AgentResolution"),
    "ToolResult": ("context_harness.core.catalog", "ToolResult"),
    "DocumentChanges": ("context_harness.ingest.sync", "DocumentChanges"),
    "Harness": ("context_harness.core.harness", "Harness"),
    "check_installed": ("context_harness.core.recovery", "check_installed"),
    "SourceDetail": ("context_harness.core.reports", "SourceDetail"),
    "needs_approval": ("context_harness.core.running", "needs_approval"),
    "new_run_id": ("context_harness.core.running", "new_run_id"),
    "init_workspace": ("context_harness.core.workspace", "init_workspace"),
    "WorkspaceSet": ("context_harness.core.workspaces", "WorkspaceSet"),
    "CLIENT": ("context_harness.core.writeback", "CLIENT"),
    "ServerSetup": ("context_harness.extensions", "ServerSetup"),
    "prepare_server": ("context_harness.extensions", "prepare_server"),
    "hook_events": ("context_harness.hooks.events", None),
    "ProgressFn": ("context_harness.ingest.sync", "ProgressFn"),
    "CheckReport": ("context_harness.models", "CheckReport"),
    "DocumentListing": ("context_harness.models", "DocumentListing"),
    "DocumentOut": ("context_harness.models", "DocumentOut"),
    "EmbedSummary": ("context_harness.models", "EmbedSummary"),
    "GetRequest": ("context_harness.models", "GetRequest"),
    "MigrationReport": ("context_harness.models", "MigrationReport"),
    "NoteDeleteRequest": ("context_harness.models", "NoteDeleteRequest"),
    "NoteEditRequest": ("context_harness.models", "NoteEditRequest"),
    "NoteMoveRequest": ("context_harness.models", "NoteMoveRequest"),
    "NoteResult": ("context_harness.models", "NoteResult"),
    "NoteWriteRequest": ("context_harness.models", "NoteWriteRequest"),
    "RecentRequest": ("context_harness.models", "RecentRequest"),
    "RecentResponse": ("context_harness.models", "RecentResponse"),
    "RelatedRequest": ("context_harness.models", "RelatedRequest"),
    "RelatedResponse": ("context_harness.models", "RelatedResponse"),
    "SearchRequest": ("context_harness.models", "SearchRequest"),
    "SearchResponse": ("context_harness.models", "SearchResponse"),
    "SourcesResponse": ("context_harness.models", "SourcesResponse"),
    "StatsOut": ("context_harness.models", "StatsOut"),
    "SyncReport": ("context_harness.models", "SyncReport"),
    "SyncSummary": ("context_harness.models", "SyncSummary"),
    "TrashEntryOut": ("context_harness.models", "TrashEntryOut"),
    "registries": ("context_harness.registries.service", None),
    "ExtensionRow": ("context_harness.registries.results", "ExtensionRow"),
    "demo_config": ("context_harness.sample", "demo_config"),
    "Headings": ("context_harness.search.windows", "Headings"),
    "Tool": ("context_harness.tools.base", "Tool"),
    "hints": ("context_harness.tools.base", "hints"),
    "SCOPES": ("context_harness.tools.base", "SCOPES"),
    "AuthorizedClient": ("context_harness.store.grants", "AuthorizedClient"),
    "CodeRow": ("context_harness.store.grants", "CodeRow"),
    "GrantStore": ("context_harness.store.grants", "GrantStore"),
    "digest": ("context_harness.store.grants", "digest"),
    "required_scope": ("context_harness.tools.base", "required_scope"),
    "render_json": ("context_harness.tools.base", "render_json"),
    "render_note": ("context_harness.tools.notes", "render_note"),
}


def __getattr__(name: str) -> Any:
    """A name of the face, imported from where it lives on first use (PEP 562), then kept here."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = importlib.import_module(module)
    value = value if attribute is None else getattr(value, attribute)
    globals()[name] = value
    return value


__all__ = [
    "AGENT_SCHEME", "AgentDraft", "AgentFile", "AgentFiles", "AgentInfo", "AgentPreview", "AgentPrompt",
    "AgentResolution", "Agents", "Approval", "Approver", "ArgumentRow", "CLAUDE_CODE_TOOLS", "CLIENT", "ChatReply",
    "ClientSide", "DocumentChanges", "Documents", "ExtensionRow", "Harness", "Indexing", "LIFECYCLE", "NEW_SKILL",
    "Notes", "PARTS", "RUN_CLIENT", "RunRequest", "Runs", "SKILL_FILE", "SKILL_NAME", "SKILL_SCHEME", "Searching",
    "ServerSetup", "Skill", "SourceDetail", "Sources", "StepListener", "Tool", "ToolCall", "ToolResult", "Tools",
    "Unavailable", "agent_settings", "agent_text", "check_draft", "check_installed", "checked_text", "demo_config",
    "draft_from_file", "hints", "init_workspace", "needs_approval", "new_run_id", "parse_skill", "prepare_server",
    "prompt_get_messages", "registries", "render_json", "render_note", "scripts", "skill_text",
    "SCOPES", "required_scope", "AuthorizedClient", "CodeRow", "GrantStore", "digest", "hook_events", "OpenAIChat",
    "WorkspaceSet",
]
