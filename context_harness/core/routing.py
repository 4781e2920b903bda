"""The tools of many workspaces served as one (``core/workspaces.py``): routed, merged, labelled.

Each workspace keeps its own ``ToolSet``; this module composes them without changing a tool:

- ``workspaces`` (new) lists each workspace: name, sources, counts, writable; and those set aside.
- ``search`` and ``recent`` take an optional ``workspace`` (default: all), call each workspace's own
  tool with the other arguments and merge the answers (``merge``: by score, as measured); ``sources``
  lists every workspace's. A search's ``max_tokens`` is the merged answer's (``search.budget``), not
  each workspace's.
- ``get``, ``related``, ``note_edit``, ``note_move`` and ``note_delete`` go to the workspace holding
  the ``id`` (bare, or qualified ``workspace:id``); ``note_write`` and ``note_restore`` to the
  ``workspace`` named, or the one writable workspace. Every result names its ``workspace``.
- Every other tool (Lua, agents', extensions') appears once per workspace, under its own name, or
  ``WORKSPACE__NAME`` where two workspaces have a tool of that name; agents (prompts) alike.

Schemas are each workspace's own, with ``workspace`` added: a built-in's schema changed elsewhere is
served here changed too.
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from context_harness.common.validation import parse_search
from context_harness.errors import BadRequest, HarnessError, NotConfigured, UnknownTool
from context_harness.search.budget import answer_tokens, fit_search_payload
from context_harness.tools.base import READ_ONLY_LOCAL, Tool, render, required_scope
from context_harness.tools.render import render_search

if TYPE_CHECKING:
    from context_harness.agents.models import AgentInfo
    from context_harness.core.catalog import ToolResult
    from context_harness.core.harness import Harness

QUALIFIER = ":"  # workspace:id
SEPARATOR = "__"  # WORKSPACE__TOOL where two workspaces have a tool of that name
FANNED = {"search": "results", "recent": "changes"}  # merged from every workspace asked
BY_ID = ("get", "related", "note_edit", "note_move", "note_delete")
BY_WORKSPACE = ("note_write", "note_restore")
NOTES = ("note_write", "note_edit", "note_move", "note_delete", "note_restore")
ROUTED = ("search", "get", "sources", "recent", "related", *NOTES)
# How fanned-out results merge. benchmarks/workspaces.py --merge (SciFact in 3 workspaces, 300 queries), nDCG@10
# raw / normalised / interleaved: keyword 0.6954 / 0.5485 / 0.5492 split evenly, 0.6938 / 0.6205 / 0.628 split
# 80/15/5 (one workspace holding all: 0.6936); hybrid (1,000 documents) 0.8542 / 0.6299 / 0.6393 and
# 0.8576 / 0.832 / 0.8337 (one: 0.8568). The scores are on one scale already (BM25 as the engine gives it; hybrid's
# scaled fusion does not depend on the candidates), and forcing each workspace's best to the top promotes a
# workspace with nothing relevant.
MERGE = "raw"

WORKSPACE_PROPERTY = {"type": "string", "description": "Only this workspace (a name `workspaces` lists); "
                      "default: all of them."}
LABEL = {"type": "string", "description": "The workspace this comes from."}


@dataclass
class Workspace:
    """One workspace being served: its registry name, config file and open knowledge base."""

    name: str
    config_path: Path
    harness: Harness

    @property
    def writable(self) -> bool:
        return bool(self.harness.writable_sources())


@dataclass(frozen=True)
class SetAside:
    """A registry entry not served, and why."""

    name: str
    config: str
    problem: str


class Workspaces(Protocol):
    """What the router needs of ``core/workspaces.WorkspaceSet``."""

    served: list[Workspace]
    set_aside: list[SetAside]

    def visible(self) -> list[Workspace]: ...
    def require(self, workspace: Workspace, scope: str, tool: str) -> None: ...
    def workspace(self, name: str) -> Workspace: ...
    async def owner(self, doc_id: str, among: list[Workspace] | None = None) -> tuple[Workspace, str]: ...


@dataclass
class RoutedTool:
    """A tool served across workspaces: ``base`` (one workspace's tool) with another name or schema,
    calling ``run``; its text is ``base``'s rendering with each item's source named with its workspace."""

    name: str
    base: Tool | None
    run: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    description: str
    title: str | None = None
    annotations: dict[str, Any] = field(default_factory=lambda: dict(READ_ONLY_LOCAL))
    builtin: bool = True
    scope: str | None = None

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.run(arguments)

    def render(self, payload: dict[str, Any]) -> str:
        return render(self.base, labelled_sources(payload)) if self.base is not None else _json(payload)


def _json(payload: dict[str, Any]) -> str:
    from context_harness.tools.base import render_json

    return render_json(payload)


def labelled_sources(payload: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``payload`` for the text block: each item's ``source`` reads ``WORKSPACE · SOURCE``."""
    out = dict(payload)
    for key in ("results", "changes", "sources", "links_to", "linked_from", "similar"):
        if isinstance(out.get(key), list):
            out[key] = [_label(item, "name" if key == "sources" else "source") for item in out[key]]
    if "workspace" in out and "source" in out:
        out = _label(out, "source")
    return out


def _label(item: Any, key: str) -> Any:
    if isinstance(item, dict) and item.get("workspace") and key in item:
        return {**item, key: f"{item['workspace']} · {item[key]}"}
    return item


def with_workspace(schema: dict[str, Any] | None, lists: tuple[str, ...] = (), top: bool = False,
                   argument: bool = False) -> dict[str, Any] | None:
    """A copy of ``schema`` with ``workspace``: as an optional argument, a top-level field (``top``),
    and on the items of the arrays ``lists``."""
    if schema is None:
        return None
    schema = copy.deepcopy(schema)
    properties = schema.setdefault("properties", {})
    if argument:
        properties["workspace"] = dict(WORKSPACE_PROPERTY)
    if top:
        properties["workspace"] = dict(LABEL)
    for key in lists:
        items = properties.get(key, {}).get("items")
        if isinstance(items, dict):
            items.setdefault("properties", {})["workspace"] = dict(LABEL)
    return schema


# -- merging -------------------------------------------------------------------------------------

def merge(lists: list[tuple[str, list[dict[str, Any]]]], limit: int, how: str = MERGE) -> list[dict[str, Any]]:
    """At most ``limit`` items of every workspace's ranked list, each labelled with its workspace:

    - ``raw`` (``MERGE``): by ``score`` as each workspace gave it, highest first (ties: the workspace
      listed first);
    - ``normalised``: each item's ``score`` over its workspace's best — one workspace's top result
      counts as much as another's;
    - ``interleaved``: first of each, then second of each ...
    """
    labelled = [[{**item, "workspace": name} for item in items] for name, items in lists]
    if how == "interleaved":
        out = [row[i] for i in range(max(map(len, labelled), default=0)) for row in labelled if i < len(row)]
        return out[:limit]
    keyed = []
    for order, row in enumerate(labelled):
        best = max((_score(item) for item in row), default=0.0)
        for rank, item in enumerate(row):
            value = _score(item)
            if how == "normalised":
                value = value / best if best > 0 else 1.0 / (rank + 1)
            keyed.append((-value, order, rank, item))
    keyed.sort(key=lambda k: k[:3])
    return [item for *_, item in keyed[:limit]]


def _score(item: dict[str, Any]) -> float:
    score = item.get("score")
    return float(score) if isinstance(score, int | float) and math.isfinite(score) else 0.0


# -- the router ----------------------------------------------------------------------------------

class Router:
    """The tools of a ``WorkspaceSet``: built fresh on each listing, so a workspace's reload shows."""

    def __init__(self, workspaces: Workspaces) -> None:
        self.set = workspaces
        # While serving, the tools by the workspaces a request sees; a workspace's change of tools or
        # agents clears it (``changed``). Building them costs ~1.2 ms with 3 workspaces, 4x a search.
        self.caching = False
        self._cache: dict[tuple[str, ...], dict[str, Tool]] = {}

    def changed(self, kind: str) -> None:
        """A workspace's tools, prompts or resources changed: build the tools again on next use."""
        self._cache.clear()

    def tools(self) -> list[Tool]:
        return list(self._tools().values())

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        from context_harness.core.catalog import ToolResult

        tool = self._tools().get(name)
        if tool is None:
            raise UnknownTool(f"unknown tool {name!r}; list the tools to see the available ones")
        if not isinstance(arguments, dict):
            raise BadRequest("arguments must be a JSON object")
        return ToolResult(tool, await tool.call(arguments))

    def _tools(self) -> dict[str, Tool]:
        key = tuple(w.name for w in self.set.visible())
        cached = self._cache.get(key) if self.caching else None
        if cached is None:
            cached = self._build()
            if self.caching:
                self._cache[key] = cached
        return cached

    def _build(self) -> dict[str, Tool]:
        out: dict[str, Tool] = {"workspaces": self._workspaces_tool()}
        for name in ROUTED:
            base = self._base(name)
            if base is not None:
                out[name] = self._routed(name, base)
        for name, (workspace, tool) in self._own_tools().items():
            out[name] = self._own(name, workspace, tool)
        return out

    def _base(self, name: str) -> Tool | None:
        """The first workspace's tool ``name`` (the note tools: the first writable workspace's)."""
        for workspace in self.set.visible():
            tool = next((t for t in workspace.harness.tools() if t.name == name), None)
            if tool is not None:
                return tool
        return None

    # -- each workspace's own tools ------------------------------------------------------

    def _own_tools(self) -> dict[str, tuple[Workspace, Tool]]:
        """Every tool not routed, by the name it is served under: its own, or ``WORKSPACE__NAME``
        where more than one workspace has it (or it would hide a routed tool)."""
        offered = [(w, t) for w in self.set.visible() for t in w.harness.tools() if t.name not in ROUTED]
        count = Counter(t.name for _, t in offered)
        return {(t.name if count[t.name] == 1 and t.name != "workspaces" else f"{w.name}{SEPARATOR}{t.name}"): (w, t)
                for w, t in offered}

    def agent_names(self) -> dict[str, tuple[Workspace, AgentInfo]]:
        """Every workspace's agents by the name they are served under, as tools are named."""
        offered = [(w, info) for w in self.set.visible() for info in w.harness.agents()]
        count = Counter(info.name for _, info in offered)
        return {(info.name if count[info.name] == 1 else f"{w.name}{SEPARATOR}{info.name}"): (w, info)
                for w, info in offered}

    def _own(self, name: str, workspace: Workspace, tool: Tool) -> Tool:
        async def run(arguments: dict[str, Any]) -> dict[str, Any]:
            self.set.require(workspace, required_scope(tool), name)
            return (await workspace.harness.call_tool(tool.name, arguments)).payload

        described = tool.description if name == tool.name else f"[workspace {workspace.name}] {tool.description}"
        return RoutedTool(name, tool, run, tool.input_schema, tool.output_schema, described, tool.title,
                          dict(tool.annotations), tool.builtin, getattr(tool, "scope", None))

    # -- the routed built-ins ------------------------------------------------------------

    def _routed(self, name: str, base: Tool) -> Tool:
        lists = {"search": ("results",), "recent": ("changes",), "sources": ("sources",),
                 "related": ("links_to", "linked_from", "similar")}.get(name, ())
        top = name in BY_ID or name in BY_WORKSPACE
        run: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
        if name in FANNED:
            run = self._fanned(name)
        elif name == "sources":
            run = self._sources
        elif name in BY_WORKSPACE:
            run = self._to_writable(name)
        else:
            run = self._by_id(name)
        return RoutedTool(name, base, run, with_workspace(base.input_schema, argument=True) or {},
                          with_workspace(base.output_schema, lists, top=top), base.description, base.title,
                          dict(base.annotations), base.builtin, getattr(base, "scope", None))

    def _targets(self, arguments: dict[str, Any]) -> tuple[list[Workspace], dict[str, Any]]:
        """The workspaces ``arguments`` name (``workspace``; default all) and the other arguments."""
        rest = dict(arguments)
        named = rest.pop("workspace", None)
        if named is None:
            return list(self.set.visible()), rest
        if not isinstance(named, str):
            raise BadRequest("workspace must be a string: a name `workspaces` lists")
        return [self.set.workspace(named.strip().lower())], rest

    def _fanned(self, name: str) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
        key = FANNED[name]

        async def run(arguments: dict[str, Any]) -> dict[str, Any]:
            targets, rest = self._targets(arguments)
            budget = None
            if name == "search" and rest.get("max_tokens") is not None:  # one budget for the merged answer
                budget = parse_search(rest).max_tokens
                rest = {k: v for k, v in rest.items() if k != "max_tokens"}
            answers = await self._each(targets, name, rest)
            payloads = [(w.name, p) for w, p in answers if isinstance(p, dict)]
            failed = [(w.name, p) for w, p in answers if isinstance(p, HarnessError)]
            if not payloads:
                raise failed[0][1]
            limit = rest.get("limit") if isinstance(rest.get("limit"), int) else None
            limit = limit or (targets[0].harness.config.retrieval.final_limit if name == "search" else 20)
            if name == "search":
                merged = merge([(n, p.get(key, [])) for n, p in payloads], limit)
            else:  # newest first across workspaces
                items = [{**c, "workspace": n} for n, p in payloads for c in p.get(key, [])]
                merged = sorted(items, key=lambda c: str(c.get("at", "")), reverse=True)[:limit]
            out = {**payloads[0][1], key: await self.qualified(merged)}
            notices = [f"{n}: {p['notice']}" for n, p in payloads if p.get("notice")]
            notices += [f"{n}: {e.message}" for n, e in failed]
            if notices:
                out["notice"] = "; ".join(notices)
            elif "notice" in out:
                del out["notice"]
            return out if budget is None else fit_search_payload(out, budget, answer_tokens(render_search))

        return run

    async def _each(self, targets: list[Workspace], name: str,
                    arguments: dict[str, Any]) -> list[tuple[Workspace, dict[str, Any] | HarnessError]]:
        """Tool ``name`` of each of ``targets`` at once: its payload, or the ``HarnessError`` it raised
        (with one target, raised)."""
        answers: list[Any] = [None] * len(targets)

        async def one(i: int, workspace: Workspace) -> None:
            try:
                answers[i] = (await workspace.harness.call_tool(name, dict(arguments))).payload
            except HarnessError as exc:
                if len(targets) == 1:
                    raise
                answers[i] = exc

        async with anyio.create_task_group() as tg:
            for i, workspace in enumerate(targets):
                tg.start_soon(one, i, workspace)
        return list(zip(targets, answers, strict=True))

    async def qualified(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``items`` (each with its ``workspace``) with the ``id`` of any that another workspace also has
        (the same source name and path in both) qualified, ``workspace:id``, so that it reads the one meant."""
        ids = sorted({item["id"] for item in items if isinstance(item.get("id"), str)})
        if len(self.set.visible()) < 2 or not ids:
            return items

        def holders() -> Counter[str]:
            held: Counter[str] = Counter()
            for workspace in self.set.visible():
                if workspace.harness.store is not None:
                    held.update(workspace.harness.store.summaries(ids).keys())
            return held

        held = await workspace_thread(holders)
        return [{**item, "id": f"{item['workspace']}{QUALIFIER}{item['id']}"} if held[item.get("id", "")] > 1 else item
                for item in items]

    async def _sources(self, arguments: dict[str, Any]) -> dict[str, Any]:
        targets, rest = self._targets(arguments)
        answers = await self._each(targets, "sources", rest)
        out: dict[str, Any] = {"sources": [], "overlaps": [], "embedding": {}, "set_aside": []}
        for workspace, payload in answers:
            if isinstance(payload, HarnessError):
                raise payload
            out["sources"] += [{**s, "workspace": workspace.name} for s in payload.get("sources", [])]
            out["overlaps"] += payload.get("overlaps", [])
            out["embedding"][workspace.name] = payload.get("embedding", {})
            out["set_aside"] += [{**s, "workspace": workspace.name} for s in payload.get("set_aside", [])]
        return out

    def _by_id(self, name: str) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
        async def run(arguments: dict[str, Any]) -> dict[str, Any]:
            targets, rest = self._targets(arguments)
            doc_id = rest.get("id")
            if not isinstance(doc_id, str) or not doc_id.strip():
                return (await targets[0].harness.call_tool(name, rest)).payload  # its own validation answers
            workspace, bare = await self.set.owner(doc_id, targets if "workspace" in arguments else None)
            self._allowed(workspace, name)
            if name in NOTES and not workspace.writable:
                raise read_only(workspace)
            payload = _labelled((await workspace.harness.call_tool(name, {**rest, "id": bare})).payload, workspace.name)
            for key in ("links_to", "linked_from", "similar"):
                if isinstance(payload.get(key), list):
                    payload[key] = await self.qualified(payload[key])
            return payload

        return run

    def _to_writable(self, name: str) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
        async def run(arguments: dict[str, Any]) -> dict[str, Any]:
            rest = dict(arguments)
            named = rest.pop("workspace", None)
            writable = [w for w in self.set.visible() if w.writable]
            if named is not None:
                workspace = self.set.workspace(str(named).strip().lower())
                if not workspace.writable:
                    raise read_only(workspace)
            elif len(writable) == 1:
                workspace = writable[0]
            else:
                raise BadRequest(f"{name} needs `workspace`: one of the writable workspaces "
                                 f"({', '.join(w.name for w in writable)})")
            self._allowed(workspace, name)
            return _labelled((await workspace.harness.call_tool(name, rest)).payload, workspace.name)

        return run

    def _allowed(self, workspace: Workspace, name: str) -> None:
        """Refuse a call of ``name`` in ``workspace`` its OAuth token lacks the scope for there."""
        tool = next((t for t in workspace.harness.tools() if t.name == name), None)
        if tool is not None:
            self.set.require(workspace, required_scope(tool), name)

    # -- workspaces --------------------------------------------------------------------------

    def _workspaces_tool(self) -> Tool:
        return RoutedTool(
            "workspaces", None, self._list_workspaces, {"type": "object", "properties": {},
                                                        "additionalProperties": False},
            WORKSPACES_OUTPUT, "List the workspaces this server serves: each one's name, sources, document and "
            "chunk counts, and whether notes can be written in it; and those set aside, with why. Pass a name as "
            "`workspace` to `search`, `recent` or `related` to look in that one only.",
            "List the workspaces")

    async def _list_workspaces(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if arguments:
            raise BadRequest(f"workspaces takes no arguments (got {', '.join(sorted(arguments))})")
        rows = []
        for workspace in self.set.visible():
            sources = await workspace.harness.sources()
            rows.append({"name": workspace.name, "config": str(workspace.config_path),
                         "sources": [s.name for s in sources.sources],
                         "documents": sum(s.document_count for s in sources.sources),
                         "chunks": sum(s.chunk_count for s in sources.sources),
                         "writable": workspace.writable,
                         "writable_sources": workspace.harness.writable_sources()})
        whole = len(rows) == len(self.set.served)  # a token seeing fewer is not told of other entries
        return {"workspaces": rows, "set_aside": [{"name": s.name, "config": s.config, "problem": s.problem}
                                                  for s in self.set.set_aside] if whole else []}


async def workspace_thread(fn: Callable[[], Any]) -> Any:
    return await anyio.to_thread.run_sync(fn)


def _labelled(payload: dict[str, Any], name: str) -> dict[str, Any]:
    out = {**payload, "workspace": name}
    for key in ("links_to", "linked_from", "similar"):
        if isinstance(out.get(key), list):
            out[key] = [{**item, "workspace": name} for item in out[key]]
    return out


def read_only(workspace: Workspace) -> NotConfigured:
    return NotConfigured(f"workspace {workspace.name!r} is read-only: none of its sources has writable = true "
                         f"(in {workspace.config_path})")


WORKSPACES_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "workspaces": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "config": {"type": "string"},
            "sources": {"type": "array", "items": {"type": "string"}},
            "documents": {"type": "integer"}, "chunks": {"type": "integer"}, "writable": {"type": "boolean"},
            "writable_sources": {"type": "array", "items": {"type": "string"}}},
            "required": ["name", "sources", "documents", "chunks", "writable"]}},
        "set_aside": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "config": {"type": "string"}, "problem": {"type": "string"}}}},
    },
    "required": ["workspaces", "set_aside"],
}


__all__ = ["MERGE", "QUALIFIER", "ROUTED", "SEPARATOR", "RoutedTool", "Router", "SetAside", "Workspace", "Workspaces",
           "merge", "with_workspace"]
