"""``ctx tool ...`` and ``ctx connector ...``: list, try out and scaffold Lua tools and connectors.

Part of the CLI rim: it parses options, calls the Harness (or, for a bare ``.lua`` path, the Lua
tool or connector itself) and renders the result. ``ctx tool list --json`` prints exactly the REST
``GET /tools/list`` body; ``ctx tool test`` prints exactly the payload MCP ``tools/call``
(structured content) and REST ``POST /tools/{name}`` return. Errors print one
line on stderr and exit with the code from ``errors.outcome`` (1).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from context_harness import timestamps
from context_harness.cli.support import Group, config_option, load_config, print_json, run_with_harness
from context_harness.config import Config, LuaConfig, ScriptConfig
from context_harness.errors import BadRequest, NotConfigured, NotFound

if TYPE_CHECKING:
    from context_harness.harness import Harness
    from context_harness.tools.base import Tool

SHOW_ITEMS = 5


# -- plumbing ------------------------------------------------------------------------------------

def _script_name(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)[:64] or "script"


def _resolve(kind: str, target: str, config: Config | None) -> tuple[str, ScriptConfig, LuaConfig]:
    """``NAME`` of a ``[KIND.script.NAME]`` entry, or a path to a ``.lua`` file."""
    entries: dict[str, ScriptConfig] = {}
    if config is not None:
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


def write_new(path: Path, text: str) -> None:
    if path.exists():
        raise BadRequest(f"{path} already exists; not overwriting it (choose another NAME or --path)")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as out:
        out.write(text)


def snippet_path(path: Path, config: Config | None) -> str:
    base = config.base_dir if config is not None and config.source_path else Path.cwd()
    absolute = path.resolve()
    try:
        return absolute.relative_to(base.resolve()).as_posix()
    except ValueError:
        return absolute.as_posix()


# -- ctx tool ------------------------------------------------------------------------------------

@click.group(cls=Group)
def tool() -> None:
    """Lua tools: list them, try one, or start a new one from a template."""


@tool.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON as REST GET /tools/list.")
@config_option
@click.pass_context
def tool_list(ctx: click.Context, as_json: bool, config_path: str | None, root: str | None) -> None:
    """List the tools MCP clients see: built-ins, agent tools, extension tools and Lua tools."""
    async def listing(harness: Harness) -> tuple[list[Tool], dict[str, Any]]:
        return harness.tools(), harness.catalog.tool_listing()

    listed, body = run_with_harness(ctx, listing)
    if as_json:
        print_json(body)
        return
    for t in listed:
        kind = "built-in" if t.builtin else f"lua ({getattr(t, 'path', '')})"
        hints = ", ".join(k for k, v in t.annotations.items() if v is True) or "no hints"
        click.echo(f"{t.name}  [{kind}; {hints}]")
        click.echo(f"    {t.description}")
        params = t.input_schema.get("properties", {})
        required = set(t.input_schema.get("required", []))
        if params:
            click.echo("    params: " + ", ".join(
                f"{n}{'*' if n in required else ''}:{p.get('type', 'any')}" for n, p in params.items()))
    for missing in body.get("unavailable", []):
        click.echo(f"{missing['name']}  [lua; UNAVAILABLE]")
        click.echo(f"    {missing['message']}")


@tool.command("test")
@click.argument("target", metavar="NAME|PATH")
@click.option("--param", "params", multiple=True, metavar="K=V",
              help="An argument, typed by the tool's parameters (repeatable; arrays/objects as JSON).")
@config_option
@click.pass_context
def tool_test(ctx: click.Context, target: str, params: tuple[str, ...], config_path: str | None,
              root: str | None) -> None:
    """Call a Lua tool once and print its result JSON ({"result": ...}, as MCP and REST return it).

    NAME is a [tools.script.NAME] entry; PATH a .lua file (run with no config keys). With a config,
    context.search/get/sources reach its knowledge base.
    """
    from context_harness.context import HarnessContext
    from context_harness.lua.tools import LuaTool
    from context_harness.tools.script import ScriptTool

    config = load_config(ctx, required=not Path(target).is_file())
    name, entry, lua = _resolve("tools", target, config)
    script = ScriptTool(LuaTool(name, entry, lua, max_instances=1))  # this script only, not the whole catalog
    arguments = script.lua.parse_cli_params(list(params))
    if config is None:
        print_json(script.call_sync(arguments))
        return

    async def call(harness: Harness) -> dict[str, Any]:
        script.context = HarnessContext(harness)
        return await script.call(arguments)

    print_json(run_with_harness(ctx, call, config))


@tool.command("init")
@click.argument("name")
@click.option("--path", "path", type=click.Path(dir_okay=False), default=None,
              help="Where to write the script (default: tools/NAME.lua). Never overwrites.")
@click.pass_context
def tool_init(ctx: click.Context, name: str, path: str | None) -> None:
    """Write a starter Lua tool and print the config snippet to add to ctx.toml."""
    from context_harness.lua.templates import render_tool
    from context_harness.lua.tools import check_tool_name

    check_tool_name(name)
    _init_script(ctx, "tools", name, path, render_tool, f"ctx tool test {name} --param text=hello")


def _init_script(ctx: click.Context, kind: str, name: str, path: str | None, render: Callable[[str, str], str],
                 next_step: str) -> None:
    """Write a starter script (never over an existing file) and print the config snippet to add."""
    from context_harness.lua.templates import config_snippet

    target = Path(path or os.path.join(kind, f"{name}.lua"))
    config = load_config(ctx, required=False)
    shown = snippet_path(target, config)
    write_new(target, render(name, shown))
    click.echo(f"created {target}")
    click.echo("add to your config:\n")
    click.echo(config_snippet(kind, name, shown))
    click.echo(f"then: {next_step}")


# -- ctx connector -------------------------------------------------------------------------------

@click.group(cls=Group)
def connector() -> None:
    """Lua connectors: try one, or start a new one from a template."""


def _item_json(item: Any) -> dict[str, Any]:
    return {
        "source_id": item.source_id, "title": item.title, "author": item.author, "source_url": item.source_url,
        "content_type": item.content_type, "tags": item.tags, "metadata": item.metadata,
        "created_at": timestamps.to_iso(item.created_at),
        "updated_at": timestamps.to_iso(item.updated_at),
        "body": item.body,
    }


@connector.command("test")
@click.argument("target", metavar="NAME|PATH")
@click.option("--show", type=click.IntRange(min=0), default=SHOW_ITEMS,
              help=f"How many items to print (default {SHOW_ITEMS}).")
@click.option("--json", "as_json", is_flag=True, help="Print count, items, skipped and warnings as JSON.")
@config_option
@click.pass_context
def connector_test(ctx: click.Context, target: str, show: int, as_json: bool, config_path: str | None,
                   root: str | None) -> None:
    """Run a Lua connector's scan once (nothing is indexed): item count, first items, skipped items.

    NAME is a [connectors.script.NAME] entry (or script:NAME); PATH a .lua file.
    """
    from context_harness.connectors.base import ScanReport
    from context_harness.lua.connector import LuaConnector

    config = load_config(ctx, required=not Path(target).is_file())
    name, entry, lua = _resolve("connectors", target, config)
    conn = LuaConnector(name, entry, lua)
    report = ScanReport()
    items = conn.fetch(report)
    skipped = dict(report.skipped)
    if as_json:
        print_json({"source": conn.label, "count": len(items), "items": [_item_json(i) for i in items[:show]],
                     "skipped": skipped, "warnings": report.warnings})
        return
    click.echo(f"{conn.label}: {len(items)} item{'s' if len(items) != 1 else ''}"
               + (f", {sum(skipped.values())} skipped" if skipped else ""))
    for item in items[:show]:
        body = " ".join(item.body.split())
        click.echo(f"- {item.source_id}: {item.title or '(no title)'}"
                   + (f"  <{item.source_url}>" if item.source_url else ""))
        click.echo(f"    {body[:100]}{'…' if len(body) > 100 else ''}")
    if len(items) > show:
        click.echo(f"... and {len(items) - show} more")
    for reason, count in skipped.items():
        click.echo(f"skipped {count} ({reason})")
    for warning in report.warnings:
        click.echo(f"warning: {warning}")


@connector.command("init")
@click.argument("name")
@click.option("--path", "path", type=click.Path(dir_okay=False), default=None,
              help="Where to write the script (default: connectors/NAME.lua). Never overwrites.")
@click.pass_context
def connector_init(ctx: click.Context, name: str, path: str | None) -> None:
    """Write a starter Lua connector and print the config snippet to add to ctx.toml."""
    from context_harness.lua.templates import render_connector

    _init_script(ctx, "connectors", name, path, render_connector,
                 f"ctx connector test {name}   and   ctx sync script:{name}")


__all__ = ["connector", "tool"]
