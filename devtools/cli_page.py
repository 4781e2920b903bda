"""``reference/cli.md``: every ``ctx`` command and option, from the click group in ``context_harness/cli``."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import click

from devtools.markdown import GENERATED_NOTE, Undocumented, code, table


def commands(group: click.Group | None = None, parent: click.Context | None = None,
             ) -> Iterator[tuple[click.Context, click.Command]]:
    """``(context, command)`` for the group and every command below it, depth first, in listed order."""
    if group is None:
        from context_harness.cli import cli

        group = cli
    ctx = parent or click.Context(group, info_name="ctx")
    if parent is None:
        yield ctx, group
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = click.Context(command, info_name=name, parent=ctx)
        yield sub, command
        if isinstance(command, click.Group):
            yield from commands(command, sub)


def help_text(command: click.Command) -> str:
    """The command's help as Markdown paragraphs (click's ``\\b`` and ``\\f`` markers dropped)."""
    text = inspect.cleandoc((command.help or command.short_help or "").split("\f", 1)[0])
    return "\n".join(line for line in text.splitlines() if line.strip() != "\b")


def options(ctx: click.Context, command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def missing(group: click.Group | None = None) -> list[str]:
    """The commands and options of ``group`` (default: ``ctx``) without help text."""
    out = []
    for ctx, command in commands(group):
        path = ctx.command_path
        if not help_text(command).strip():
            out.append(f"{path} (its docstring or help=)")
        out += [f"{path} {'/'.join(o.opts)} (help=)" for o in options(ctx, command) if not (o.help or "").strip()]
    return out


def option_row(ctx: click.Context, option: click.Option) -> tuple[str, str, str]:
    record = option.get_help_record(ctx)
    names, text = record if record is not None else (", ".join(option.opts), option.help or "")
    default = option.default
    plain = isinstance(default, (str, int, float)) and not isinstance(default, bool)
    shown = str(default) if plain and not option.is_flag and default != "" and "[default:" not in text else ""
    return code(names), text, code(shown) if shown else ""


def page() -> str:
    found = missing()
    if found:
        raise Undocumented("reference/cli.md", found, "context_harness/cli/ (a command's docstring, help=)")
    out = ["# CLI reference", "", GENERATED_NOTE.format(source="the click commands in `context_harness/cli/`"), "",
           "`ctx` and `context-harness` are one program. `context-harness` with no command serves MCP over stdio "
           "(what an MCP client starts); `ctx` with no command prints its help. Every command takes `-h`/`--help`; "
           "the options of `ctx` itself come before the command (`ctx --config FILE sync`).", ""]
    for ctx, command in commands():
        depth = ctx.command_path.count(" ")
        out += ["#" * (max(depth, 1) + 1) + " " + ctx.command_path, ""]
        usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
        out += ["```text", usage, "```", "", help_text(command), ""]
        if isinstance(command, click.Group) and depth:
            subs = [(code(f"{ctx.command_path} {n}"), c.get_short_help_str(limit=200))
                    for n in command.list_commands(ctx) if (c := command.get_command(ctx, n)) and not c.hidden]
            out += [table(["command", "what it does"], subs), ""]
        rows = [option_row(ctx, o) for o in options(ctx, command)]
        if rows:
            out += [table(["option", "description", "default"], rows), ""]
    return "\n".join(out).rstrip() + "\n"
