"""``ctx doctor [CLIENT]``: start the server exactly as a client's config says (command, args, env,
working folder), shake hands over MCP, search, list the sources, and say in one line the first thing
that fails, with the fix and the server's stderr, which clients hide ("Failed to connect").

Which entries: CLIENT's (user and project files, and for Claude Code the current folder's "local"
entry in ``~/.claude.json``, where ``claude mcp add`` puts it); without CLIENT, every client file that has the
server (``--name``, default ``context-harness``); when none has it, the entry ``ctx setup`` would
write. The environment: Claude Code and Gemini CLI pass the shell's own; the others start servers from
the app (Codex: with a short list of variables), with only the MCP SDKs' default variables (``HOME``,
``PATH``, ``SHELL``, ``TERM``, ``USER``, ``LOGNAME``), plus the entry's ``env`` in every case. The folder: the
entry's ``cwd``, else ``/`` for Claude Desktop and the current folder for the others.

A project file (``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json``, ``.codex/config.toml``,
``.gemini/settings.json``, ``.zed/settings.json``) came with the folder, maybe a
clone: its entry starts only if it is this installation's server as it stands (``clients.foreign_server``)
or a person at the terminal says yes; without a terminal it is shown and not started.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from context_harness.cli.setup import CLIENT_NAMES, SERVER_NAME
from context_harness.cli.support import ERROR_EXIT, config_option
from context_harness.cli.workspaces import doctor_lines, entry_registry_warnings
from context_harness.errors import ConfigError, NotConfigured

if TYPE_CHECKING:  # the client table, the MCP client and anyio load when the command runs
    from context_harness.cli.clients import Client

PROBLEM_PREFIX = "context-harness cannot serve: "  # server/stdio.py serve_problem's instructions
STDERR_SHOWN = 12  # last lines of the server's stderr shown with a failure
_UNSET = re.compile(r"environment variables? ([A-Z_][A-Z0-9_]*(?:, [A-Z_][A-Z0-9_]*)*) not set")
INSPECTOR = "npx @modelcontextprotocol/inspector@2.12.0 --cli --method tools/list --"  # `--`: its own --config


@dataclass
class Target:
    """One server entry to check: where it was found and what it says."""

    title: str  # "Claude Code (user) ~/.claude.json" or "the entry `ctx setup` writes"
    client: Client | None
    entry: dict[str, Any]
    file: Path | None = None
    scope: str = "user"  # "project": a file in the folder, which a cloned repository can write


@dataclass
class Finding:
    ok: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # not a problem for a stdio client
    warnings: list[str] = field(default_factory=list)  # it works, but not as meant (sources that overlap)
    problems: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    refused: str | None = None  # the command of a project entry not started, to show


def targets(client: str | None, scope: str | None, name: str, explicit: str | None, root: str | None) -> list[Target]:
    """The entries to check (see the module docstring). Without CLIENT, a client file that cannot be read
    is named on stderr and the others are still checked."""
    from context_harness.cli.clients import CLIENTS, config_file, current_platform, read_object

    chosen = [CLIENTS[client]] if client else list(CLIENTS.values())
    found, looked, unread = [], [], []
    for each in chosen:
        for where in [scope] if scope else ["user", "project", "local"]:
            if (where == "project" and each.project_file is None) or (where == "local" and each.name != "claude-code"):
                continue
            path = config_file(each, "user" if where == "local" else where, current_platform(), Path.cwd())
            looked.append(path)
            try:
                data = read_object(path, each) or {}
            except ConfigError as exc:
                if client:  # the file of the client asked for: its error is the answer
                    raise
                unread.append(str(exc).split(". `ctx setup` changed nothing")[0])
                continue
            if where == "local":  # `claude mcp add`'s default: ~/.claude.json, under this folder's project
                data = (data.get("projects") or {}).get(str(Path.cwd())) or {}
            servers = data.get(each.servers_key) if isinstance(data, dict) else None
            entry = servers.get(name) if isinstance(servers, dict) else None
            if isinstance(entry, dict):
                found.append(Target(f"{each.title} ({where}) {path}", each, entry, path, where))
    for problem in unread:  # without CLIENT, one client's unreadable file does not hide the others' entries
        click.echo(f"not read: {problem}", err=True)
    if found or client:
        if not found:
            raise NotConfigured(f"no server {name!r} in {', '.join(map(str, looked))}: run `ctx setup {client}` first")
        return found
    return [Target("the entry `ctx setup` writes (no client has one yet)", None, setup_entry(explicit, root))]


def setup_entry(explicit: str | None, root: str | None) -> dict[str, Any]:
    """What ``ctx setup`` would write here, without loading the config (the server is to say what is wrong)."""
    from context_harness import config as config_mod
    from context_harness.cli.clients import server_executable

    command, _ = server_executable()
    if root and not explicit:
        return {"command": command[0], "args": [*command[1:], "--root", str(Path(root).expanduser().resolve())]}
    return {"command": command[0], "args": [*command[1:], "--config", str(config_mod.discover(explicit))]}


def launch(target: Target) -> tuple[str, list[str], dict[str, str], str]:
    """(command, args, environment, folder) as the client starts the server."""
    entry = target.entry
    env = {str(k): str(v) for k, v in (entry.get("env") or {}).items()} if isinstance(entry.get("env"), dict) else {}
    inherits = target.client is None or target.client.shell_env  # else the SDK's default variables
    full = {**os.environ, **env} if inherits else env  # the MCP SDK adds its default variables to this
    folder = entry.get("cwd") or ("/" if target.client is not None and target.client.name == "claude-desktop"
                                  else os.getcwd())
    return str(entry.get("command") or ""), [str(a) for a in entry.get("args") or []], full, str(folder)


Ask = Callable[[str, str], bool]  # (the command as shown, why it is not ours) -> start it?


def check(target: Target, query: str, timeout: float, ask: Ask | None = None) -> Finding:
    """Every step for one entry, stopping at the first that fails. A project entry that is not this
    installation's server starts only if ``ask`` (a person at a terminal) says yes."""
    import shutil
    import tempfile

    import anyio

    found = Finding()
    entry = target.entry
    if "command" not in entry:
        found.problems.append(f"not a stdio entry ({', '.join(sorted(entry)) or 'empty'}): doctor checks entries "
                              "with a command; an HTTP server is checked with `curl URL/health`")
        return found
    command, args, env, folder = launch(target)
    resolved = shutil.which(command, path=env.get("PATH") or os.defpath) if os.sep not in command else command
    if resolved and not os.path.isabs(resolved):  # the client starts it in the entry's folder
        resolved = os.path.join(folder, resolved)
    if not resolved or not os.access(resolved, os.X_OK):
        fix = f"run `ctx setup {target.client.name}` again" if target.client else "install context-harness"
        found.problems.append(f"cannot run {command!r}: no such program here (moved, uninstalled, or a uv cache "
                              f"that was cleaned?): {fix} to write the full path of the current install")
        return found
    if not Path(folder).is_dir():
        found.problems.append(f"the entry's working folder {folder} does not exist: fix \"cwd\" in {target.file}")
        return found
    shown = _visible(f"{shlex.join([command, *args])} (in {folder})")
    if target.scope == "project" and not _consented(target, resolved, args, folder, shown, ask, found):
        return found
    found.ok.append(f"command: {shown}")
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            anyio.run(_session, command, args, env, folder, errlog, query, timeout, found)
        except TimeoutError:
            found.problems.append(f"no answer within {timeout:g} s: the server hangs (see its stderr below), or "
                                  "needs longer: --timeout")
        except Exception as exc:  # the server is gone, or the handshake broke: its stderr says why
            if not found.problems:
                found.problems.append(f"the server closed the connection before answering ({_cause(exc)})")
        errlog.seek(0)
        found.stderr = [line.rstrip() for line in errlog.read().splitlines() if line.strip()][-STDERR_SHOWN:]
    closed = found.problems and found.problems[0].startswith("the server closed the connection")
    if closed and found.stderr:  # its own last word says more than "connection closed"
        said = [line for line in found.stderr if line.lower().startswith("error")] or found.stderr
        found.problems[0] = f"the server stopped before answering: {said[-1]}"
    _hint_env(found, target)
    return found


def _consented(target: Target, resolved: str, args: list[str], folder: str, shown: str, ask: Ask | None,
               found: Finding) -> bool:
    """Whether a project entry may start: it is this installation's server, or a person said yes."""
    from context_harness.cli.clients import foreign_server

    added = target.entry.get("env")
    why = foreign_server(resolved, args, {str(k): str(v) for k, v in added.items()} if isinstance(added, dict)
                         else {}, folder)
    if why is None:
        return True
    why = _visible(why)
    if ask is not None:
        if ask(shown, f"this entry comes from {target.file}, a project file (a cloned repository can write it), "
                      f"and {why}"):
            return True
        found.problems.append("not started: you said no")
        return False
    client = target.client.name if target.client else ""
    found.problems.append(f"not started: this entry comes from a project file (a cloned repository can write "
                          f"it), and {why}; read the command above, and if you trust it run `ctx doctor {client} "
                          f"--scope project` at a terminal to confirm, or remove the entry from {target.file}")
    found.refused = shown
    return False


async def _session(command: str, args: list[str], env: dict[str, str], folder: str, errlog: Any, query: str,
                   timeout: float, found: Finding) -> None:
    import time

    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command, args=args, env=env, cwd=folder)
    with anyio.fail_after(timeout):
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog)) as client:
            instructions = client.instructions or ""
            if instructions.startswith(PROBLEM_PREFIX):
                found.problems.append(instructions.removeprefix(PROBLEM_PREFIX).split(". Every tool answers")[0])
                return
            found.ok.append(f"MCP handshake in {time.perf_counter() - started:.1f} s")
            started = time.perf_counter()
            result = await client.call_tool("search", {"query": query, "mode": "keyword"})
            if result.is_error:
                found.problems.append(f"search failed: {_error_text(result)}")
                return
            hits = len((result.structured_content or {}).get("results") or [])
            found.ok.append(f"search answered in {time.perf_counter() - started:.1f} s ({hits} results for {query!r})")
            sources = await client.call_tool("sources", {})
            _sources(found, sources.structured_content or {})


def _sources(found: Finding, listing: dict[str, Any]) -> None:
    rows = listing.get("sources") or []
    for source in rows:
        if source.get("status") == "failing":
            found.problems.append(f"source {source['name']} is failing: {source.get('status_reason')}")
    for part in listing.get("set_aside") or []:
        if part["kind"] == "http":  # a stdio client never needs it
            found.notes.append(f"HTTP serving is set aside: {part['message']}")
        else:
            found.problems.append(f"{part['kind']} {part['name']} is set aside: {part['message']}")
    found.warnings.extend(str(overlap.get("message")) for overlap in listing.get("overlaps") or [])
    advice = (listing.get("embedding") or {}).get("language_advice")
    if advice:  # most documents in languages the embedding model does not read, with the line that fixes it
        found.warnings.append(str(advice.get("message")))
    if not found.problems:
        documents = sum(int(s.get("document_count") or 0) for s in rows)
        found.ok.append(f"{len(rows)} source(s), {documents} documents, none failing")


def _hint_env(found: Finding, target: Target) -> None:
    """A variable the server misses but this shell has: the client does not pass it."""
    for i, problem in enumerate(found.problems):
        match = _UNSET.search(problem)
        names = [n for n in (match[1].split(", ") if match else []) if n in os.environ]
        if names and target.file is not None:
            pairs = ", ".join(f'"{n}": "..."' for n in names)
            found.problems[i] = (f"{problem} — {', '.join(names)} is set in this shell, not in what "
                                 f"{target.client.title if target.client else 'the client'} passes: add "
                                 f'"env": {{{pairs}}} to the entry in {target.file}')


def _visible(text: str) -> str:
    """``text`` with every character a terminal would act on or hide (controls, ESC sequences,
    bidirectional overrides such as U+202E) escaped, so the command shown is the command run."""
    return "".join(c if c.isprintable() else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
                   for c in text)


def _ask(shown: str, why: str) -> bool:
    """Show a project entry's command and ask a person at the terminal whether to start it (no by
    default; what was typed before the question is discarded, so it cannot answer it)."""
    click.echo(f"  command: {shown}")
    click.echo(f"  {why}")
    try:
        import termios

        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):  # no termios (Windows), or not a terminal after all
        pass
    try:
        return click.confirm("  Start it?", default=False)
    except click.Abort:  # Ctrl-D
        click.echo("")
        return False


def _error_text(result: Any) -> str:
    import json

    text = result.content[0].text if result.content else ""
    try:
        return str(json.loads(text)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return text or "an error with no message"


def _cause(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@click.command()
@click.argument("client", required=False, type=click.Choice(CLIENT_NAMES))
@click.option("--scope", type=click.Choice(["user", "project", "local"]), default=None,
              help="Only the user's file, the project's, or (Claude Code) this folder's entry in ~/.claude.json "
              "(`claude mcp add`'s default); default: all three.")
@click.option("--name", default=SERVER_NAME, show_default=True, help="The server's name in the client.")
@click.option("--query", default="notes", show_default=True, help="What the test search looks for.")
@click.option("--timeout", type=click.FloatRange(min=1), default=60, show_default=True,
              help="Seconds each server has to start, answer the handshake and the search.")
@config_option
def doctor(client: str | None, scope: str | None, name: str, query: str, timeout: float, config_path: str | None,
           root: str | None) -> None:
    """Check that CLIENT can start and use the server: run its entry as the client does (command, args,
    env, folder), shake hands over MCP, search, and print the first thing that fails with the fix and
    the server's stderr. Without CLIENT: every client that has the server, else what `ctx setup` writes."""
    ctx = click.get_current_context()
    obj = ctx.find_root().obj or {}
    failed = 0
    for target in targets(client, scope, name, config_path or obj.get("config_path"), root or obj.get("root")):
        click.echo(target.title)
        found = check(target, query, timeout, _ask if sys.stdin.isatty() else None)
        if found.refused:
            click.echo(f"  command: {found.refused}")
        for line in found.ok:
            click.echo(f"  ok: {line}")
        for line in found.notes:
            click.echo(f"  note: {line}")
        for line in [*found.warnings, *entry_registry_warnings(target.entry)]:
            click.echo(f"  warning: {line}")
        if found.problems:
            failed += 1
            click.echo(f"  FAILED: {found.problems[0]}")
            for more in found.problems[1:]:
                click.echo(f"  also: {more}")
            if found.stderr:
                who = target.client.title if target.client else "a client"
                click.echo(f"  the server's stderr (which {who} does not show):")
                for line in found.stderr:
                    click.echo(f"    | {line}")
        else:
            command = shlex.join([str(target.entry["command"]), *map(str, target.entry.get("args") or [])])
            click.echo(f"  by hand: {INSPECTOR} {command}")
    served, set_aside = doctor_lines()  # the workspaces `context-harness --workspaces` serves
    for line in served:
        click.echo(line)
    for line in set_aside:
        click.echo(f"  warning: {line}")
    if failed:
        raise SystemExit(ERROR_EXIT)
