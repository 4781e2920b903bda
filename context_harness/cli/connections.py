"""``ctx recent`` and ``ctx related ID``: the change log and how a document connects (``--json``: the
payloads the MCP tools return)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from context_harness.cli.support import config_option, print_json, run_with_harness

if TYPE_CHECKING:
    from context_harness.models import RecentResponse, RelatedResponse


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
    from context_harness.common.validation import parse_recent

    request = parse_recent({"since": since, "source": source, "limit": limit})
    response = run_with_harness(ctx, lambda h: h.recent(request))
    if as_json:
        print_json(response.model_dump(mode="json"))
    else:
        _print_recent(response)


@click.command()
@click.argument("doc_id")
@click.option("--limit", type=int, default=10, show_default=True, help="Most documents per list (1-100).")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON payload MCP and REST return.")
@config_option
@click.pass_context
def related(ctx: click.Context, doc_id: str, limit: int, as_json: bool, config_path: str | None,
            root: str | None) -> None:
    """Print what a document links to, what links to it, and its nearest documents by meaning."""
    from context_harness.common.validation import parse_related

    request = parse_related({"id": doc_id, "limit": limit})
    response = run_with_harness(ctx, lambda h: h.related(request))
    if as_json:
        print_json(response.model_dump(mode="json"))
    else:
        _print_related(response)


def _print_recent(response: RecentResponse) -> None:
    if not response.changes:
        click.echo("no changes recorded in that window")
    for c in response.changes:
        click.echo(f"{c.at}  {c.change:<7}  {c.title or c.source_id}  [{c.source} · {c.source_id}]  {c.id}")


def _print_related(response: RelatedResponse) -> None:
    click.echo(f"{response.title or response.id} ({response.id})")
    for heading, items in (("Links to", response.links_to), ("Linked from", response.linked_from),
                           ("Similar", response.similar)):
        click.echo(f"{heading}:" + ("" if items else " none"))
        for i in items:
            score = f"  {i.score:.3f}" if i.score is not None else ""
            click.echo(f"  {i.title or i.source_id}  [{i.source} · {i.source_id}]  {i.id}{score}")
    if response.unresolved:
        click.echo("Unresolved links: " + ", ".join(u.target for u in response.unresolved))
    if response.note:
        click.echo(f"Note: {response.note}", err=True)
