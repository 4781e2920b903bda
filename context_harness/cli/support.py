"""Plumbing shared by the ``ctx`` command modules: error exits, JSON output, config options, and
``run_with_harness`` (open the Harness for the command's config, run one core call).

A command given ``--json`` reports an error as one line of JSON on stderr, ``{"error": {"code",
"message"}}`` (the shape MCP and REST use), with the same exit code; stdout stays empty. Every error
exits ``ERROR_EXIT`` (1); click exits 2 for a usage error (see ``errors``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from context_harness.errors import ConfigError, HarnessError

if TYPE_CHECKING:  # imported where a command needs them: `ctx --version` and `--help` start in a blink
    from context_harness.config import Config
    from context_harness.core.face import Harness

T = TypeVar("T")
ERROR_EXIT = 1
JSON_WANTED = "context_harness.json"  # in ``click.Context.meta`` (shared by a command and its groups)


def wants_json() -> bool:
    """Whether the running command was given ``--json``."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and bool(ctx.meta.get(JSON_WANTED) or ctx.params.get("as_json"))


def fail(error: HarnessError) -> NoReturn:
    """One line on stderr (JSON under ``--json``), exit ``ERROR_EXIT``, no traceback."""
    if wants_json():
        click.echo(json.dumps(error.to_dict(), ensure_ascii=False), err=True)
    else:
        click.echo(f"error: {error.message}", err=True)
    sys.exit(ERROR_EXIT)


def print_json(payload: Any) -> None:
    click.echo(json.dumps(payload, ensure_ascii=False, indent=2))


def config_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--config`` and ``--root`` on a command (they may also be given before the command)."""
    fn = click.option("--root", "root", type=click.Path(file_okay=False), default=None,
                      help="Index this folder without a config file (workspace kept in the user data dir).")(fn)
    return click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
                        help="Config file (default: $CTX_CONFIG, ./.ctx/config.toml, ./ctx.toml, "
                        "then ~/.config/context-harness/config.toml).")(fn)


def load_config(ctx: click.Context, required: bool = True) -> Config | None:
    """The config named by the command's or the group's options, else the discovered one.
    With ``required=False`` a missing config (and no explicit option) gives None."""
    from context_harness import config as config_mod

    obj = ctx.find_root().obj or {}
    explicit = ctx.params.get("config_path") or obj.get("config_path")
    root = ctx.params.get("root") or obj.get("root")
    if root and not explicit:
        return config_mod.for_root(Path(root))
    try:
        return config_mod.load(explicit)
    except ConfigError:
        if required or explicit:
            raise
        return None


class Group(click.Group):
    """A command group whose commands turn ``HarnessError`` into a one-line error and exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        args = ctx.args[:ctx.args.index("--")] if "--" in ctx.args else ctx.args
        if "--json" in args:
            ctx.meta[JSON_WANTED] = True
        try:
            return super().invoke(ctx)
        except HarnessError as error:
            fail(error)


def required_config(ctx: click.Context) -> Config:
    config = load_config(ctx)
    assert config is not None
    return config


def run_with_harness(ctx: click.Context, body: Callable[[Harness], Awaitable[T]],
                     config: Config | None = None) -> T:
    """Open the Harness for the command's config (with the extensions of installed packages), run
    ``body(harness)``, and turn a ``HarnessError`` into one line on stderr and its exit code."""
    import anyio

    from context_harness.core.face import Harness

    async def main() -> T:
        chosen = config if config is not None else required_config(ctx)
        async with Harness.installed(chosen) as harness:
            return await body(harness)

    try:
        return anyio.run(main)
    except HarnessError as error:
        fail(error)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
