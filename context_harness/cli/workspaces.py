"""``ctx workspace add/list/remove``: the registry of workspaces one server serves together
(``config/workspaces.py``), and what ``ctx doctor`` says of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from context_harness.cli.support import ERROR_EXIT, fail, print_json
from context_harness.errors import HarnessError


def file_option(fn: Any) -> Any:
    return click.option("--file", "file", type=click.Path(dir_okay=False), default=None,
                        help="The registry file (default: ~/.config/context-harness/workspaces.toml, "
                        "under $XDG_CONFIG_HOME when set).")(fn)


def registry_file(file: str | None) -> Path:
    from context_harness.config import workspaces

    return Path(file).expanduser() if file else workspaces.default_file()


@click.group("workspace")
def workspace() -> None:
    """Workspaces served together by `context-harness --workspaces`: one process, one MCP entry."""


@workspace.command("add")
@click.argument("name")
@click.argument("config", type=click.Path(dir_okay=False))
@file_option
def add(name: str, config: str, file: str | None) -> None:
    """Register the workspace config file CONFIG (such as ~/notes/.ctx/config.toml) as workspace NAME."""
    from context_harness.config import load_file, workspaces

    target = registry_file(file)
    try:
        entry = workspaces.add(target, name, Path(config))
    except HarnessError as error:
        fail(error)
    click.echo(f"added workspace {name} ({entry.config}) to {target}")
    try:
        load_file(entry.config)
    except HarnessError as error:  # registered all the same: it serves once fixed
        click.echo(f"warning: its config does not load, so it is set aside until fixed: {error.message}", err=True)


@workspace.command("remove")
@click.argument("name")
@file_option
def remove(name: str, file: str | None) -> None:
    """Remove workspace NAME from the registry (its config and data stay as they are)."""
    from context_harness.config import workspaces

    target = registry_file(file)
    try:
        entry = workspaces.remove(target, name)
    except HarnessError as error:
        fail(error)
    click.echo(f"removed workspace {name} ({entry.config}) from {target}")


@workspace.command("list")
@file_option
@click.option("--json", "as_json", is_flag=True, help="Print the workspaces as JSON.")
def list_command(file: str | None, as_json: bool) -> None:
    """List the registered workspaces; a bad one (its config missing, not loading, or registered twice)
    is marked as set aside with why, and the command exits 1."""
    target = registry_file(file)
    try:
        rows = listing(target)
    except HarnessError as error:
        fail(error)
    if as_json:
        print_json({"file": str(target), "workspaces": rows})
    elif not rows:
        click.echo(f"no workspaces in {target}; add one with `ctx workspace add NAME CONFIG`")
    name_width = max((len(row["name"]) for row in rows), default=0)
    config_width = max((len(row["config"]) for row in rows), default=0)
    for row in rows if not as_json else []:
        status = "ok" if row["ok"] else f"SET ASIDE: {row['problem']}"
        click.echo(f"{row['name']:<{name_width}}  {row['config']:<{config_width}}  {status}")
    if any(not row["ok"] for row in rows):
        raise SystemExit(ERROR_EXIT)


def listing(file: Path) -> list[dict[str, Any]]:
    """Every entry of ``file`` in file order: name, config, ok, and the problem of a bad one."""
    from context_harness.config import workspaces

    checked = workspaces.check(file)
    problems = {entry.name: why for entry, why in checked.bad}
    return [{"name": entry.name, "config": str(entry.config), "ok": entry.name not in problems,
             "problem": problems.get(entry.name)} for entry in workspaces.read(file)]


def doctor_lines(file: Path | None = None) -> tuple[list[str], list[str]]:
    """What ``ctx doctor`` says of the registry (``file``, default the user's, when it exists): the
    workspaces that serve, and a warning for each one set aside."""
    from context_harness.config import workspaces

    file = file or workspaces.default_file()
    if not file.is_file():
        return [], []
    try:
        checked = workspaces.check(file)
    except HarnessError as error:
        return [], [error.message]
    ok = [f"workspaces {file}: {len(checked.good)} serve ({', '.join(e.name for e, _ in checked.good) or 'none'})"]
    return ok, [f"workspace {entry.name} is set aside: {why}" for entry, why in checked.bad]


def entry_registry_warnings(entry: dict[str, Any]) -> list[str]:
    """The workspaces set aside of the registry a client's server entry serves (``--workspaces FILE``),
    each as a warning line; none for another entry, or one serving the user's registry (said after)."""
    args = [str(a) for a in entry.get("args") or []]
    if "--workspaces" not in args:
        return []
    following = args[args.index("--workspaces") + 1:][:1]
    file = Path(following[0]).expanduser() if following and not following[0].startswith("-") else None
    if file is not None and not file.is_absolute() and entry.get("cwd"):
        file = Path(str(entry["cwd"])) / file
    if file is None:  # the user's registry: `ctx doctor` reports it once, after the clients
        return []
    return doctor_lines(file)[1] if file.is_file() else [f"the registry {file} does not exist"]


__all__ = ["doctor_lines", "entry_registry_warnings", "listing", "workspace"]
