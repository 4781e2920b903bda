"""``ctx recent`` and ``ctx related ID``: the change log and how a document connects (the same
payloads as the MCP tools, rendered the same way)."""

from __future__ import annotations

import click

from context_harness.cli.support import config_option, print_json, run_with_harness
from context_harness.tools.render import render_recent, render_related


@click.command()
@click.option("--since", default=None, help="Only changes since this date/time or duration back (30m, 12h, 7d, 2w).")
@click.option("--source", default=None, help="Only this source (a label or a connector type).")
@click.option("--limit", type=int, default=20, show_default=True, help="Most changes to print (1-200).")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON payload MCP and REST return.")
@config_option
@click.pass_context
def recent(ctx: click.Context, since: str | None, source: str | None, limit: int, as_json: bool,
           config_path: str | None, root: str | None) -> None:
    """List the documents added, updated or deleted most recently, newest first."""
    from context_harness.validation import parse_recent

    request = parse_recent({"since": since, "source": source, "limit": limit})
    payload = run_with_harness(ctx, lambda h: h.recent(request)).model_dump(mode="json")
    if as_json:
        print_json(payload)
    else:
        click.echo(render_recent(payload))


@click.command()
@click.argument("doc_id")
@click.option("--limit", type=int, default=10, show_default=True, help="Most documents per list (1-100).")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON payload MCP and REST return.")
@config_option
@click.pass_context
def related(ctx: click.Context, doc_id: str, limit: int, as_json: bool, config_path: str | None,
            root: str | None) -> None:
    """Print what a document links to, what links to it, and its nearest documents by meaning."""
    from context_harness.validation import parse_related

    request = parse_related({"id": doc_id, "limit": limit})
    payload = run_with_harness(ctx, lambda h: h.related(request)).model_dump(mode="json")
    if as_json:
        print_json(payload)
    else:
        click.echo(render_related(payload))
