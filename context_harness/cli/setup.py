"""``ctx setup CLIENT``: write this install's MCP server into a client's config file (``clients``
knows the files and the merge). A rim utility: it reads and writes client files, no ``Harness``.
``clients`` is imported when the command runs, not when ``context-harness`` starts to serve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from context_harness.cli.support import config_option
from context_harness.errors import BadRequest

if TYPE_CHECKING:
    from context_harness.cli.clients import Plan


def server_args(ctx: click.Context, config_path: str | None, root: str | None) -> list[str]:
    """``--config FILE`` (absolute) for the config ``ctx`` itself would use here, or ``--root DIR``.
    The config is loaded first, so a broken one is reported now rather than by the client."""
    obj = ctx.find_root().obj or {}
    explicit = config_path or obj.get("config_path")
    root = root or obj.get("root")
    if root and not explicit:
        folder = Path(root).expanduser().resolve()
        if not folder.is_dir():
            raise BadRequest(f"--root {root}: no such folder")
        return ["--root", str(folder)]
    from context_harness import config as config_mod

    path = config_mod.discover(explicit)
    config_mod.load_file(path)
    return ["--config", str(path)]


def write_plan(result: Plan, print_only: bool, unchanged: str) -> bool:
    """Show what ``result`` changes and write it, keeping a backup, unless ``print_only``; say ``unchanged``
    when it changes nothing. True when the file was written (``ctx setup`` and ``ctx hook install``)."""
    from context_harness.cli.clients import apply

    if not result.changed:
        click.echo(unchanged)
        return False
    click.echo(result.diff())
    if print_only:
        click.echo("--print: nothing written")
        return False
    backup = apply(result)
    if backup is not None:
        click.echo(f"backup of the previous file: {backup}")
    return True


def snippet(servers_key: str, name: str, entry: dict[str, object], toml: bool) -> str:
    """The entry as it goes into the client's file, to paste by hand: JSON, or a TOML table."""
    if not toml:
        return json.dumps({servers_key: {name: entry}}, indent=2, ensure_ascii=False)
    import tomlkit

    table = tomlkit.table()
    table.update(entry)
    return tomlkit.dumps({servers_key: {name: table}}).strip()


CLIENT_NAMES = ("claude-desktop", "claude-code", "cursor", "vscode", "codex", "gemini", "windsurf", "zed", "cline",
                "lm-studio")  # client_table.CLIENTS, without importing it
SERVER_NAME = "context-harness"


@click.command()
@click.argument("client", type=click.Choice(CLIENT_NAMES))
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
              help="The user's config file, or the project's in the current folder (claude-code, cursor, vscode, "
              "codex, gemini, zed).")
@click.option("--name", default=SERVER_NAME, show_default=True, help="The server's name in the client.")
@click.option("--print", "print_only", is_flag=True, help="Show the entry and what would change; write nothing.")
@config_option
@click.pass_context
def setup(ctx: click.Context, client: str, scope: str, name: str, print_only: bool, config_path: str | None,
          root: str | None) -> None:
    """Add this install's MCP server to CLIENT's config (claude-desktop, claude-code, cursor, vscode, codex,
    gemini, windsurf, zed, cline, lm-studio).

    Merges one entry into the file: other servers and settings stay (comments too, in VS Code's, Zed's,
    Gemini CLI's and Codex's files), the old file is kept as a backup, a second run changes nothing. The
    entry runs the installed `context-harness` with --config FILE."""
    import shlex

    from context_harness.cli.clients import (
        CLIENTS,
        config_file,
        current_platform,
        plan,
        server_entry,
        server_executable,
        temporary_install,
    )

    chosen = CLIENTS[client]
    if scope == "project" and chosen.project_file is None:
        raise click.BadParameter(f"{chosen.title} has no project config; use --scope user", param_hint="--scope")
    command, found = server_executable()
    entry = server_entry(chosen, [*command, *server_args(ctx, config_path, root)])
    path = config_file(chosen, scope, current_platform(), Path.cwd())
    click.echo(f"{chosen.title} ({scope}): {path}")
    click.echo(f"server {name!r}: {shlex.join([entry['command'], *entry['args']])}")
    click.echo(f"  ({found})")
    if temporary_install(command):
        click.echo("warning: this command lives in uv's cache, which uv may clean; install first "
                   "(`uv tool install`, `pipx install`) and run `ctx setup` from that install", err=True)
    if print_only:
        click.echo(snippet(chosen.servers_key, name, entry, chosen.format == "toml"))
    if not write_plan(plan(chosen, path, name, entry), print_only, f"{path} already has this entry; nothing changed"):
        return
    click.echo(f"wrote {path}; restart {chosen.title} (or reload its MCP servers) to start it")
    named = f" --name {shlex.quote(name)}" if name != SERVER_NAME else ""  # doctor looks for this entry
    click.echo(f"check it as {chosen.title} will start it: ctx doctor {client}{named}")
