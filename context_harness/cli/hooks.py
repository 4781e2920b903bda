"""``ctx hook``: the assistant's memory loop through its client's hooks (``hooks/``).

``ctx hook install CLIENT`` merges the entries into the client's settings (``hook_install``). The client
then runs ``ctx hook session-start`` when a session starts (it prints the digest as the hook's
``additionalContext``), and ``ctx hook pre-compact`` / ``ctx hook stop`` before a compaction and after
each answer (they write the session's note into ``[hooks] inbox``). These three never fail the client's
session: any error is one line on stderr, exit 0, and no context.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from context_harness.cli.support import Group, config_option

if TYPE_CHECKING:
    from context_harness.config import Config

HOOK_CLIENTS = ("claude-code", "codex", "gemini")  # hook_install.HOOK_CLIENTS, without importing it


@click.group(cls=Group)
def hook() -> None:
    """Capture assistant sessions as notes and bring context back at a session's start (client hooks)."""


@hook.command("install")
@click.argument("client", type=click.Choice(HOOK_CLIENTS))
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
              help="The user's settings file, or the project's in the current folder.")
@click.option("--print", "print_only", is_flag=True, help="Show what would change; write nothing.")
@config_option
@click.pass_context
def install(ctx: click.Context, client: str, scope: str, print_only: bool, config_path: str | None,
            root: str | None) -> None:
    """Add the session hooks to CLIENT's settings (claude-code, codex, gemini).

    Merges one entry per event (SessionStart, PreCompact, Stop; Gemini CLI: SessionStart, PreCompress,
    SessionEnd) into the file: other hooks and settings stay, the old file is kept as a backup, a second
    run changes nothing. Each runs the installed `context-harness` with --config FILE."""
    from context_harness.cli.clients import server_executable
    from context_harness.cli.hook_install import COMMANDS, HOOK_CLIENTS, hook_command, plan_install, settings_file
    from context_harness.cli.setup import server_args, write_plan

    chosen = HOOK_CLIENTS[client]
    program, found = server_executable()
    config_args = server_args(ctx, config_path, root)
    commands = {sub: hook_command(program, config_args, sub, chosen) for sub in COMMANDS}
    path = settings_file(chosen, scope, Path.cwd())
    click.echo(f"{chosen.title} ({scope}): {path}")
    for event, sub in chosen.events:
        click.echo(f"  {event}: {commands[sub]}")
    click.echo(f"  ({found})")
    unchanged = f"{path} already has these hooks; nothing changed"
    if not write_plan(plan_install(chosen, path, commands), print_only, unchanged):
        return
    click.echo(f"wrote {path}; the hooks run from {chosen.title}'s next session")
    _say_without_inbox(ctx, config_path, root)
    if client == "codex":
        click.echo("Codex runs these hooks once you have reviewed and trusted them: type /hooks in Codex")


def _say_without_inbox(ctx: click.Context, config_path: str | None, root: str | None) -> None:
    """A warning when the config names no ``[hooks] inbox``: session notes are then not written."""
    from context_harness.cli.support import load_config

    config = load_config(ctx)
    if config is not None and config.hooks.inbox is None:
        click.echo('warning: [hooks] inbox is not set, so pre-compact and stop write no session notes; name a '
                   'writable folder source, e.g. inbox = "filesystem:notes" (docs/how-to/hooks.md)', err=True)


def _never_fail(name: str, body: Callable[[], None]) -> None:
    """Run ``body()``; any error is one line on stderr and exit 0 (the client's session goes on). An error
    of ours says what it is; any other is named by its type (its traceback is logged with ``-v``)."""
    from context_harness.errors import HarnessError

    try:
        body()
    except HarnessError as exc:
        click.echo(f"ctx hook {name}: {' '.join(exc.message.split())}", err=True)
    except Exception as exc:  # a hook must never break the client's session
        logging.getLogger("context_harness").debug("ctx hook %s failed", name, exc_info=True)
        click.echo(f"ctx hook {name}: internal error ({type(exc).__name__}); run it with -v for details", err=True)
    sys.exit(0)


@hook.command("session-start")
@config_option
@click.pass_context
def session_start(ctx: click.Context, config_path: str | None, root: str | None) -> None:
    """Read a SessionStart hook's JSON on stdin; print the context for the session (the digest within
    [hooks] budget_tokens: pinned notes, this project's last sessions, what matches it, recent changes)."""
    obj = ctx.find_root().obj or {}

    def body() -> None:
        from context_harness.core.face import hook_events

        event = hook_events.read_event(sys.stdin.buffer)
        explicit, folder = config_path or obj.get("config_path"), root or obj.get("root")
        settings = hook_events.load_settings(explicit, folder)
        context = hook_events.start_context(event, settings, explicit, folder)
        if context:
            name = event.get("hook_event_name") if isinstance(event.get("hook_event_name"), str) else None
            click.echo(json.dumps(hook_events.session_output(context, name or "SessionStart"), ensure_ascii=False))

    _never_fail("session-start", body)


def _capture(ctx: click.Context, name: str, client: str, config_path: str | None, root: str | None) -> None:
    """Write the session's note (pre-compact and stop do the same: the note is replaced each time)."""

    def body() -> None:
        import anyio

        from context_harness.cli.support import required_config
        from context_harness.core.face import Harness, NoteWriteRequest, hook_events

        event = hook_events.read_event(sys.stdin.buffer)
        config = required_config(ctx)
        summarize = _summarizer(config) if name == "pre-compact" and config.hooks.model else None
        note = hook_events.session_note(config, event, client, summarize)
        if note.unchanged:  # the file says all this already: no workspace to open
            return
        request = NoteWriteRequest(source=note.source, path=note.path, content=note.text, overwrite=True)

        async def write() -> None:
            async with Harness.installed(config) as harness:
                await harness.note_write(request)

        anyio.run(write)

    _never_fail(name, body)


def _summarizer(config: Config) -> Callable[[list[dict[str, str]]], str | None]:
    """Ask ``[hooks] model`` for the session's summary; a model that fails says so in one line on stderr
    and the note is written without a new summary."""
    import anyio

    from context_harness.core.face import OpenAIChat
    from context_harness.errors import HarnessError, NotConfigured

    name = config.hooks.model or ""

    def summarize(messages: list[dict[str, str]]) -> str | None:
        try:
            if name not in config.models:
                raise NotConfigured(f"[hooks] model = {name!r} names no [models.{name}] table")
            model = OpenAIChat(name, config.models[name])
            reply = anyio.run(lambda: model.complete(messages, [], config.models[name].timeout))
        except HarnessError as exc:
            click.echo(f"ctx hook pre-compact: no summary: {' '.join(exc.message.split())}", err=True)
            return None
        return reply.content.strip() or None

    return summarize


CLIENT_OPTION = click.option("--client", "client", type=click.Choice(HOOK_CLIENTS), default="claude-code",
                             show_default=True, help="The client that runs the hook (recorded in the note).")


@hook.command("pre-compact")
@CLIENT_OPTION
@config_option
@click.pass_context
def pre_compact(ctx: click.Context, client: str, config_path: str | None, root: str | None) -> None:
    """Read a PreCompact hook's JSON on stdin; write the session's note from its transcript into
    [hooks] inbox (what was asked, decided, changed; linked to the project's previous session)."""
    _capture(ctx, "pre-compact", client, config_path, root)


@hook.command("stop")
@CLIENT_OPTION
@config_option
@click.pass_context
def stop(ctx: click.Context, client: str, config_path: str | None, root: str | None) -> None:
    """Read a Stop hook's JSON on stdin; write (or update) the session's note, as pre-compact does."""
    _capture(ctx, "stop", client, config_path, root)
