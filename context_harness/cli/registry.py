"""``ctx registry ...``: extension registries (list, search, add, update, enable ...).

Part of the CLI rim: each command parses its options, makes one call into
the core face's ``registries`` and renders what comes back (``--json``: that data as is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from context_harness.cli.support import Group, config_option, print_json, required_config

if TYPE_CHECKING:
    from context_harness.core.face import ExtensionRow


def _json_option(fn: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(fn)


@click.group(cls=Group)
def registry() -> None:
    """Extension registries: connectors, tools and agents whose scripts can do only what they declare."""


@registry.command("init")
@config_option
@click.pass_context
def registry_init(ctx: click.Context, config_path: str | None, root: str | None) -> None:
    """Add [registries.community]: the starter registry shipped with a checkout of context-harness."""
    from context_harness.core.face import registries

    done = registries.init(required_config(ctx))
    click.echo(f"added [registries.{done['name']}] (url {done['url']}) to {done['config']}; pinned at "
               f"{(done['commit'] or '?')[:7]}")
    click.echo("next: `ctx registry list`, then `ctx registry add connectors/NAME` or `ctx registry enable tools/NAME`")


@registry.command("list")
@_json_option
@config_option
@click.pass_context
def registry_list(ctx: click.Context, as_json: bool, config_path: str | None, root: str | None) -> None:
    """List the registries (with their pinned commits) and every extension, with where it comes from."""
    from context_harness.core.face import registries

    body = registries.listing(required_config(ctx))
    if as_json:
        print_json(body)
        return
    if not body["registries"]:
        click.echo("no registries configured; `ctx registry init` adds the starter one")
    for reg in body["registries"]:
        click.echo(f"{reg['name']}  [{reg['tier']}] {reg['url']} at {(reg['commit'] or 'not cloned')[:7]} "
                   f"({reg['extensions']} extensions)")
    _extensions(body["extensions"])
    for error in body["errors"]:
        click.echo(f"error: {error}", err=True)


def _extensions(items: list[ExtensionRow]) -> None:
    for item in items:
        caps = ", ".join(item["capabilities"]) or "pure"
        click.echo(f"  {item['id']}  [{item['origin']}; {caps}] {item['state']}")
        if item["description"]:
            click.echo(f"      {item['description']}")


@registry.command("search")
@click.argument("text")
@_json_option
@config_option
@click.pass_context
def registry_search(ctx: click.Context, text: str, as_json: bool, config_path: str | None, root: str | None) -> None:
    """Extensions whose id, description or tags hold every word of TEXT."""
    from context_harness.core.face import registries

    found = registries.search(required_config(ctx), text)
    if as_json:
        print_json(found)
        return
    if not found:
        click.echo(f"no extension matches {text!r}")
    _extensions(found)


@registry.command("info")
@click.argument("ext_id", metavar="ID")
@_json_option
@config_option
@click.pass_context
def registry_info(ctx: click.Context, ext_id: str, as_json: bool, config_path: str | None, root: str | None) -> None:
    """An extension's manifest entry, which copy wins and why, its pinned commit, and whether it is on."""
    from context_harness.core.face import registries

    body = registries.info(required_config(ctx), ext_id)
    if as_json:
        print_json(body)
        return
    click.echo(body["id"])
    manifest = body["manifest"] or {}
    for key in ("kind", "description", "tags", "config", "capabilities", "hosts", "env"):
        if key in manifest:
            value = manifest[key]
            click.echo(f"  {key}: {', '.join(value) if isinstance(value, list) else value}")
    if body["script"]:
        click.echo(f"  script: {body['script']}")
    click.echo(f"  wins: {body['why']}")
    click.echo(f"  state: {body['state']}")


@registry.command("add")
@click.argument("ext_id", metavar="ID")
@config_option
@click.pass_context
def registry_add(ctx: click.Context, ext_id: str, config_path: str | None, root: str | None) -> None:
    """Use a registry's connector (or tool): write its table into the config, its settings as placeholders."""
    from context_harness.core.face import registries

    done = registries.add(required_config(ctx), ext_id)
    click.echo(f"added [{done['table']}] to {done['config']}")
    if done["set"]:
        then = "`ctx sync`" if done["table"].startswith("connectors.") else f"`ctx tool test {done['name']}`"
        click.echo(f"set {', '.join(done['set'])} there, then {then}")


@registry.command("update")
@click.argument("name", required=False)
@click.option("--accept", is_flag=True, help="Move the pin to the fetched commit, new capabilities and hosts included.")
@_json_option
@config_option
@click.pass_context
def registry_update(ctx: click.Context, name: str | None, accept: bool, as_json: bool, config_path: str | None,
                    root: str | None) -> None:
    """Fetch the registries (or NAME): show changed files and new capabilities or hosts; apply with --accept."""
    from context_harness.core.face import registries

    plans = registries.update(required_config(ctx), name, accept)
    if as_json:
        print_json(plans)
        return
    for plan in plans:
        if plan["from"] == plan["to"]:
            click.echo(f"{plan['registry']}: up to date at {plan['from'][:7]}")
            continue
        state = "updated" if plan["applied"] else "available"
        click.echo(f"{plan['registry']}: {state} {plan['from'][:7]} -> {plan['to'][:7]}")
        for path in plan["changed"]:
            click.echo(f"  changed: {path}")
        for ext_id, asks in plan["new_asks"].items():
            click.echo(f"  NEW for {ext_id}: {', '.join(asks)}")
        if plan["note"]:
            click.echo(f"  {plan['note']}")


@registry.command("override")
@click.argument("ext_id", metavar="ID")
@config_option
@click.pass_context
def registry_override(ctx: click.Context, ext_id: str, config_path: str | None, root: str | None) -> None:
    """Copy a registry extension into the project's .ctx/ to edit it there (that copy then wins)."""
    from context_harness.core.face import registries

    done = registries.override(required_config(ctx), ext_id)
    click.echo(f"copied {done['id']} to {done['copied_to']}; edit {done['script']}")


@registry.command("remove")
@click.argument("name")
@config_option
@click.pass_context
def registry_remove(ctx: click.Context, name: str, config_path: str | None, root: str | None) -> None:
    """Remove [registries.NAME] from the config, with its copy and pin."""
    from context_harness.core.face import registries

    done = registries.remove(required_config(ctx), name)
    click.echo(f"removed [registries.{done['name']}] from {done['config']}")


@registry.command("enable")
@click.argument("ext_id", metavar="ID")
@config_option
@click.pass_context
def registry_enable(ctx: click.Context, ext_id: str, config_path: str | None, root: str | None) -> None:
    """Turn on a tool (or project connector) that asks for network or environment access, or a copy edited
    since its pin: this copy, as it is now (a different or changed copy is off until enabled again)."""
    from context_harness.core.face import registries

    done = registries.set_enabled(required_config(ctx), ext_id, True)
    hosts = f" to {', '.join(done['hosts'])}" if done["hosts"] else ""
    env = f", variables {', '.join(done['env'])}" if done["env"] else ""
    if done["was"]:
        click.echo(f"it was off: {done['was']}")
    click.echo(f"enabled {done['id']}: it may use {', '.join(done['capabilities']) or 'the pure host tables'}{hosts}"
               f"{env}; this copy only ({done['origin']}, sha256 {done['sha256'][:12]}); restart a running server "
               "to offer it")


@registry.command("disable")
@click.argument("ext_id", metavar="ID")
@config_option
@click.pass_context
def registry_disable(ctx: click.Context, ext_id: str, config_path: str | None, root: str | None) -> None:
    """Turn a tool off again (forget its consent)."""
    from context_harness.core.face import registries

    done = registries.set_enabled(required_config(ctx), ext_id, False)
    click.echo(f"disabled {done['id']}; restart a running server to drop it")
