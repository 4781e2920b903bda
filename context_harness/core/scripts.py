"""Lua tools and connectors a user is writing: try one once, or start one from a template.

``ctx tool test``, ``ctx connector test`` and ``ctx tool|connector init`` call these; the command line
only parses options and renders what comes back. A ``target`` is the NAME of a ``[tools.script.NAME]``
(``[connectors.script.NAME]``, also ``script:NAME``) entry of the config, or a path to a ``.lua`` file
(run with no config keys, and without a config at all when none is found).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from context_harness.common import timestamps
from context_harness.config import Config, LuaConfig, ScriptConfig
from context_harness.core.context import BlockingKnowledgeBase, HarnessContext
from context_harness.errors import NotConfigured, NotFound
from context_harness.registries.apply import apply as apply_registries


def script_entry(kind: str, target: str, config: Config | None) -> tuple[str, ScriptConfig, LuaConfig]:
    """The name, script settings and Lua limits for ``target``; ``kind`` is ``tools`` or ``connectors``.
    ``NotConfigured`` for an entry set aside (an unset variable), ``NotFound`` for neither entry nor file."""
    entries: dict[str, ScriptConfig] = {}
    if config is not None:
        config = apply_registries(config)  # a registry's script runs with its grant here too
        entries = dict(config.tools.script) if kind == "tools" else dict(config.connectors.script)
    lua = config.lua if config is not None else LuaConfig()
    name = target.removeprefix("script:") if kind == "connectors" else target
    if name in entries:
        return name, entries[name], lua
    missing = next((u for u in (config.unavailable if config is not None else [])
                    if u.key_path == f"{kind}.script.{name}"), None)
    if missing is not None:
        raise NotConfigured(f"{name!r} is unavailable: {missing.message}")
    path = Path(target).expanduser()
    if path.is_file():
        return _script_name(path), ScriptConfig(path=path.resolve()), lua
    known = ", ".join(sorted(entries)) or "none configured"
    raise NotFound(f"no [{kind}.script.{name}] in the config and no file {target!r} (configured: {known})")


def _script_name(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)[:64] or "script"


async def try_tool(target: str, params: list[str], config: Config | None,
                   knowledge: BlockingKnowledgeBase | None = None) -> dict[str, Any]:
    """Call the Lua tool ``target`` once with ``params`` (``K=V`` strings, typed by its parameters):
    ``{"result": ...}``, the payload MCP and REST return. Only this script is loaded, not the whole
    catalog; with ``knowledge``, its ``context.search/get/sources`` reach that knowledge base."""
    from context_harness.lua.tools import LuaTool
    from context_harness.tools.script import ScriptTool

    name, entry, lua = script_entry("tools", target, config)
    script = ScriptTool(LuaTool(name, entry, lua, max_instances=1))
    arguments = script.lua.parse_cli_params(params)
    if knowledge is None:
        return script.call_sync(arguments)
    script.context = HarnessContext(knowledge)
    return await script.call(arguments)


def scan_connector(target: str, config: Config | None, show: int) -> dict[str, Any]:
    """Run the Lua connector ``target``'s scan once, indexing nothing: ``{source, count, items (the
    first ``show``), skipped: {reason: count}, warnings}``."""
    from context_harness.connectors.base import ScanReport
    from context_harness.lua.connector import LuaConnector

    name, entry, lua = script_entry("connectors", target, config)
    connector = LuaConnector(name, entry, lua)
    report = ScanReport()
    items = connector.fetch(report)
    return {"source": connector.label, "count": len(items), "items": [_item_json(i) for i in items[:show]],
            "skipped": dict(report.skipped), "warnings": report.warnings}


def _item_json(item: Any) -> dict[str, Any]:
    return {
        "source_id": item.source_id, "title": item.title, "author": item.author, "source_url": item.source_url,
        "content_type": item.content_type, "tags": item.tags, "metadata": item.metadata,
        "created_at": timestamps.to_iso(item.created_at),
        "updated_at": timestamps.to_iso(item.updated_at),
        "body": item.body,
    }


def starter(kind: str, name: str, path: str) -> tuple[str, str]:
    """A starter script for a new Lua tool or connector (``kind``: ``tools`` or ``connectors``) to be
    written at ``path``, and the config snippet that registers it: ``(script, snippet)``.
    ``BadRequest`` for a name that is not valid (or, for a tool, a built-in's)."""
    from context_harness.lua.templates import config_snippet, render_connector, render_tool
    from context_harness.lua.tools import check_tool_name

    if kind == "tools":
        check_tool_name(name)
        script = render_tool(name, path)
    else:
        script = render_connector(name, path)
    return script, config_snippet(kind, name, path)


def check_agent_name(name: str) -> str:
    """``name`` when it can name an agent, else ``BadRequest`` saying what a name may hold."""
    from context_harness.agents.base import check_name

    return check_name(name, "ctx agent init")


__all__ = ["check_agent_name", "scan_connector", "script_entry", "starter", "try_tool"]
