"""``ctx tool ...`` and ``ctx connector ...``: list, try out and scaffold Lua tools and connectors.

Part of the CLI rim: it parses options, makes one core call (the Harness's, or for a bare ``.lua``
path without a config, ``context_harness.core.scripts``) and renders the result. ``ctx tool list --json``
prints exactly the REST ``GET /tools/list`` body; ``ctx tool test`` prints exactly the payload MCP ``tools/call``
(structured content) and REST ``POST /tools/{name}`` return. Errors print one
line on stderr and exit 1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from context_harness.cli.support import Group, config_option, load_config, print_json, run_with_harness
from context_harness.errors import BadRequest

if TYPE_CHECKING:
    from context_harness.config import Config
    from context_harness.core.face import Harness, Tool

SHOW_ITEMS = 5


# -- plumbing ------------------------------------------------------------------------------------

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
    async def listing(harness: Harness) -> tuple[list[Tool], dict[str, Any], dict[str, str]]:
        return harness.tools(), harness.tool_listing(), harness.config.extension_origins

    listed, body, origins = run_with_harness(ctx, listing)
    if as_json:
        print_json(body)
        return
    for t in listed:
        origin = origins.get(f"tools/{t.name}")
        kind = "built-in" if t.builtin else f"lua ({getattr(t, 'path', '')}{'; from ' + origin if origin else ''})"
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
    from context_harness.core.face import scripts

    config = load_config(ctx, required=not Path(target).is_file())
    if config is None:
        import anyio

        print_json(anyio.run(scripts.try_tool, target, list(params), None))
        return
    scripts.script_entry("tools", target, config)  # an unknown NAME fails before the workspace opens
    print_json(run_with_harness(ctx, lambda harness: harness.try_tool(target, list(params)), config))


@tool.command("init")
@click.argument("name")
@click.option("--path", "path", type=click.Path(dir_okay=False), default=None,
              help="Where to write the script (default: tools/NAME.lua). Never overwrites.")
@click.pass_context
def tool_init(ctx: click.Context, name: str, path: str | None) -> None:
    """Write a starter Lua tool and print the config snippet to add to ctx.toml."""
    _init_script(ctx, "tools", name, path, f"ctx tool test {name} --param text=hello")


def _init_script(ctx: click.Context, kind: str, name: str, path: str | None, next_step: str) -> None:
    """Write a starter script (never over an existing file) and print the config snippet to add."""
    from context_harness.core.face import scripts

    target = Path(path or os.path.join(kind, f"{name}.lua"))
    config = load_config(ctx, required=False)
    shown = snippet_path(target, config)
    script, snippet = scripts.starter(kind, name, shown)
    write_new(target, script)
    click.echo(f"created {target}")
    click.echo("add to your config:\n")
    click.echo(snippet)
    click.echo(f"then: {next_step}")


# -- ctx connector -------------------------------------------------------------------------------

@click.group(cls=Group)
def connector() -> None:
    """Lua connectors: try one, or start a new one from a template."""


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
    from context_harness.core.face import scripts

    scan = scripts.scan_connector(target, load_config(ctx, required=not Path(target).is_file()), show)
    if as_json:
        print_json(scan)
        return
    count, skipped = scan["count"], scan["skipped"]
    click.echo(f"{scan['source']}: {count} item{'s' if count != 1 else ''}"
               + (f", {sum(skipped.values())} skipped" if skipped else ""))
    for item in scan["items"]:
        body = " ".join(item["body"].split())
        click.echo(f"- {item['source_id']}: {item['title'] or '(no title)'}"
                   + (f"  <{item['source_url']}>" if item["source_url"] else ""))
        click.echo(f"    {body[:100]}{'…' if len(body) > 100 else ''}")
    if count > show:
        click.echo(f"... and {count - show} more")
    for reason, number in skipped.items():
        click.echo(f"skipped {number} ({reason})")
    for warning in scan["warnings"]:
        click.echo(f"warning: {warning}")


@connector.command("init")
@click.argument("name")
@click.option("--path", "path", type=click.Path(dir_okay=False), default=None,
              help="Where to write the script (default: connectors/NAME.lua). Never overwrites.")
@click.pass_context
def connector_init(ctx: click.Context, name: str, path: str | None) -> None:
    """Write a starter Lua connector and print the config snippet to add to ctx.toml."""
    _init_script(ctx, "connectors", name, path, f"ctx connector test {name}   and   ctx sync script:{name}")


__all__ = ["connector", "tool"]
