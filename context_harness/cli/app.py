"""The ``ctx`` group and its knowledge-base commands: init, sync, embed, search, get, sources,
stats, demo, serve. Each parses options, calls one ``Harness`` method and renders the result.

Exit codes: 0 ok, 1 a user error (one line on stderr, no traceback; JSON under ``--json``), 2 usage.
``--json`` prints exactly the payload MCP and REST return for the same operation.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from context_harness import __version__
from context_harness.cli.asking import ask_server
from context_harness.cli.progress import printer, progress_option
from context_harness.cli.setup import setup
from context_harness.cli.support import (
    ERROR_EXIT,
    Group,
    config_option,
    fail,
    print_json,
    required_config,
    run_with_harness,
)
from context_harness.errors import BadRequest, HarnessError, NotConfigured

if TYPE_CHECKING:  # imported where a command needs them: `ctx --version` and `--help` start in a blink
    from context_harness.models import EmbedSummary, SearchResponse, StatsOut, SyncReport

log = logging.getLogger("context_harness")
SKIPPED_SHOWN = 10  # skipped items `ctx sync` names per source


# -- plumbing ----------------------------------------------------------------------------------

def _setup_logging(verbose: bool) -> None:
    level = logging.DEBUG if verbose or os.environ.get("CTX_DEBUG") else logging.WARNING
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


# -- commands ----------------------------------------------------------------------------------

def workspaces_option(fn: Any) -> Any:
    """``--workspaces [FILE]``: serve the registry's workspaces (FILE, else the user's registry)."""
    return click.option("--workspaces", "workspaces", is_flag=False, flag_value=DEFAULT_REGISTRY, default=None,
                        metavar="[FILE]", help="Serve every workspace of a registry (`ctx workspace add`) in one "
                        "process: FILE, else ~/.config/context-harness/workspaces.toml.")(fn)


DEFAULT_REGISTRY = "default"  # --workspaces without FILE


@click.group(cls=Group, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@config_option
@workspaces_option
@click.option("-v", "--verbose", is_flag=True, help="Log debug details to stderr.")
@click.version_option(__version__, prog_name="context-harness")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, root: str | None, workspaces: str | None, verbose: bool) -> None:
    """context-harness: a local-first knowledge base for AI assistants, served over MCP."""
    _setup_logging(verbose)
    ctx.obj = {**(ctx.obj or {}), "config_path": config_path, "root": root, "workspaces": workspaces}
    if ctx.invoked_subcommand is None:
        if ctx.obj.get("serve_by_default"):
            ctx.invoke(serve, config_path=config_path, root=root, workspaces=workspaces)
        else:
            click.echo(ctx.get_help())


cli.add_command(setup)


@cli.command()
@click.option("--dir", "folder", type=click.Path(file_okay=False), default=".",
              help="Folder to create the .ctx workspace in (default: the current folder).")
@click.option("--docs", default="..", help="Root of the example filesystem connector, relative to .ctx/.")
def init(folder: str, docs: str) -> None:
    """Create a .ctx/ workspace: commented config.toml, data folder, .gitignore. Never overwrites."""
    from context_harness.core.face import init_workspace

    result = init_workspace(Path(folder), docs)
    if result.created:
        for path in result.created:
            click.echo(f"created {path}")
    else:
        click.echo(f"{result.folder} already exists; nothing changed")
    click.echo(f"next: edit {result.config}, then run `ctx sync`")


@cli.command()
@click.argument("target", default="all")
@click.option("--full", is_flag=True, help="Re-read and re-index every item, changed or not.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Apply at most N changes; the rest wait.")
@progress_option
@click.option("--no-embed", is_flag=True, help="Skip embedding new chunks (run `ctx embed pending` later).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@config_option
@click.pass_context
def sync(ctx: click.Context, target: str, full: bool, dry_run: bool, limit: int | None, progress_mode: str,
         quiet: bool, no_embed: bool, as_json: bool, config_path: str | None, root: str | None) -> None:
    """Sync connectors: TARGET is all (default), a type (filesystem) or TYPE:NAME."""
    emit, stop = printer(progress_mode, quiet)
    try:
        report = run_with_harness(ctx, lambda h: h.sync(target, full=full, dry_run=dry_run, limit=limit, progress=emit,
                                            embed=not no_embed))
    finally:
        stop()
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        _echo_sync(report)
        for overlap in report.overlaps:  # the same files indexed twice: said after every sync until fixed
            click.echo(f"warning: {overlap.message}", err=True)
    if report.embedding_error and as_json:  # synced, but the chunks could not be embedded
        click.echo(json.dumps({"error": report.embedding_error}, ensure_ascii=False), err=True)
    elif report.embedding_error:
        click.echo(f"error: {report.embedding_error['message']} "
                   "(the documents were synced: keyword search works meanwhile)", err=True)
    for label, why in report.set_aside.items():  # passed by: the sync did not do all it was asked
        problem = NotConfigured(f"{label} was not synced: {why}")
        click.echo(json.dumps(problem.to_dict(), ensure_ascii=False) if as_json else f"error: {problem.message}",
                   err=True)
    if report.embedding_error or report.set_aside:
        sys.exit(ERROR_EXIT)


def _echo_sync(report: SyncReport) -> None:
    for s in report.sources:
        line = (f"{s.source}: {s.added} added, {s.updated} updated, {s.deleted} deleted, "
                f"{s.unchanged} unchanged, {s.skipped} skipped")
        if s.skipped_reasons:
            line += " (" + ", ".join(f"{k}: {v}" for k, v in s.skipped_reasons.items()) + ")"
        if s.limited:
            line += "; more changes pending (--limit reached)"
        if s.dry_run:
            line += " [dry run]"
        click.echo(f"{line} in {s.seconds:.2f}s")
        for item in s.skipped_items[:SKIPPED_SHOWN]:
            click.echo(f"  skipped {item.source_id}: {item.reason}")
        if s.skipped_items and s.skipped > SKIPPED_SHOWN:
            more = s.skipped - min(SKIPPED_SHOWN, len(s.skipped_items))
            click.echo(f"  ... and {more} more (--json names up to 100)")
    if report.embedding is not None:
        _echo_embed(report.embedding)


def _echo_embed(summary: EmbedSummary) -> None:
    chunks = "chunk" if summary.embedded == 1 else "chunks"
    click.echo(f"embeddings ({summary.embedder}): {summary.embedded} {chunks} embedded, {summary.pending} pending "
               f"in {summary.seconds:.2f}s")


@cli.group()
def embed() -> None:
    """Embed chunks for semantic and hybrid search."""


def _embed_command(rebuild: bool):
    def command(ctx: click.Context, limit: int | None, batch_size: int | None, progress_mode: str, quiet: bool,
                as_json: bool, config_path: str | None, root: str | None) -> None:
        emit, stop = printer(progress_mode, quiet)
        try:
            summary = run_with_harness(ctx, lambda h: h.embed(limit=limit, batch_size=batch_size, rebuild=rebuild,
                                                  progress=emit))
        finally:
            stop()
        if as_json:
            print_json(summary.model_dump(mode="json"))
        else:
            _echo_embed(summary)

    command = config_option(command)
    command = click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")(command)
    command = progress_option(command)
    command = click.option("--batch-size", type=click.IntRange(min=1), default=None,
                           help="Texts per model call (default [embedding] batch_size).")(command)
    command = click.option("--limit", type=click.IntRange(min=1), default=None,
                           help="Embed at most N chunks; the rest stay pending.")(command)
    return click.pass_context(command)


embed.command("pending", help="Embed chunks that have no vector yet (content-addressed: never twice).")(
    _embed_command(rebuild=False))
embed.command("rebuild", help="Forget every vector and embed all chunks with the configured [embedding].")(
    _embed_command(rebuild=True))


@cli.command()
@click.argument("query")
@click.option("--mode", type=click.Choice(["keyword", "semantic", "hybrid"]), default=None,
              help="Search mode (default: [retrieval] default_mode).")
@click.option("--source", default=None, help="Only this source label (filesystem:docs) or type (filesystem).")
@click.option("--tag", "tags", multiple=True, help="Only documents with this tag (repeatable: any of them).")
@click.option("--since", default=None, help="Only documents dated (their own date, else last update) at or "
              "after this ISO 8601 date; with --since or --until, time words in the query are only words.")
@click.option("--until", default=None, help="Only documents dated at or before this ISO 8601 date "
              "(a bare date includes that whole day).")
@click.option("--symbol", default=None, help="Only code defining this symbol: a path or its end, e.g. Harness.open "
              "(same as symbol:NAME in the query).")
@click.option("--limit", type=int, default=None, help="Maximum results (1-100).")
@click.option("--max-tokens", "max_tokens", type=int, default=None, help="Fit the whole answer in this many "
              "estimated tokens (300-1,000,000): fewer results, shorter snippets; what is left out is counted.")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON payload MCP and REST return.")
@click.option("--explain", is_flag=True, help="Show scoring details per result.")
@config_option
@click.pass_context
def search(ctx: click.Context, query: str, mode: str | None, source: str | None, tags: tuple[str, ...],
           since: str | None, until: str | None, symbol: str | None, limit: int | None, max_tokens: int | None,
           as_json: bool, explain: bool, config_path: str | None, root: str | None) -> None:
    """Search the knowledge base."""
    filters = {k: v for k, v in {"source": source, "tags": list(tags) or None, "since": since,
                                 "until": until, "symbol": symbol}.items() if v is not None}
    args = {"query": query, "mode": mode, "limit": limit, "explain": explain, "filters": filters or None,
            "max_tokens": max_tokens}
    payload, config = ask_server(ctx, "search", args)  # a serving process of this workspace answers at once
    if payload is None:
        from context_harness.common.validation import parse_search

        request = parse_search(args)
        payload = run_with_harness(ctx, lambda h: h.search(request), config).model_dump(mode="json")
    if as_json:
        print_json(payload)
        return
    for line in search_lines(payload):
        click.echo(line)


def search_lines(response: dict[str, Any]) -> list[str]:
    """``ctx search`` as text, from the payload ``--json`` prints (a server's or this process's)."""
    lines = [f"note: {response['notice']}"] if response.get("notice") else []
    left_out = (response.get("omitted") or {}).get("results")
    if not response["results"]:
        lines.append(f"no result fits in --max-tokens ({left_out} left out)" if left_out else "no results")
    for i, r in enumerate(response["results"], 1):
        lines.append(f"{i}. {r['title'] or r['source_id']}  [{r['source']} · {r['source_id']}]  "
                     f"score {r['score']:.3f}")
        chunk = r.get("chunk")
        lines.append(f"   id {r['id']}" + (f" · chunk {chunk}" if chunk is not None else "")  # `ctx get ID --chunk N`
                     + (f" · dated {r['date'][:10]}" if r.get("date") else ""))
        if r.get("snippet"):
            lines.append(f"   {r['snippet']}")
        if r.get("explain"):
            lines.append(f"   explain: {explain_line(r['explain'])}")
    if left_out and response["results"]:
        lines.append(f"({left_out} more left out to fit --max-tokens)")
    cover = response.get("explain")
    if cover is not None:
        share = f" ({100 * cover['embedded_chunks'] / cover['chunks']:.0f} %)" if cover["chunks"] else ""
        by = f" by {cover['embedder']}" if cover.get("embedder") else ""  # during a model switch, the stored vectors'
        lines.append(f"mode {cover['mode']}; {cover['embedded_chunks']:,} of {cover['chunks']:,} chunks embedded"
                     f"{share}{by}" + (f"; {cover['switch']}" if cover.get("switch") else ""))
    return lines


def explain_line(explain: dict[str, Any]) -> str:
    """A result's scoring details as text: ``keyword score 0.288 (rank 1); chunk 0; notes``."""
    parts = []
    for kind in ("keyword", "semantic", "fused"):
        score = explain.get(f"{kind}_score")
        rank = explain.get(f"{kind}_rank")
        if score is not None:
            parts.append(f"{kind} score {score:.3f}" + (f" (rank {rank})" if rank is not None else ""))
    if explain.get("chunk_index") is not None:
        parts.append(f"chunk {explain['chunk_index']}")
    return "; ".join([*parts, *explain.get("notes", [])])


@cli.command()
@click.argument("doc_id")
@click.option("--chunk", type=int, default=None, help="Print the section of this chunk (a search result's): from its "
              "heading to the next heading of the same or a higher level, cut around the chunk when it is long.")
@click.option("--offset", type=int, default=None, help="Print from this character offset (a `next_offset`).")
@click.option("--max-chars", "max_chars", type=int, default=None,
              help="At most this many characters (default: for --chunk the section's cap, else [server] "
              "get_max_chars; 0: the whole section or document, up to 1,000,000 characters).")
@click.option("--max-tokens", "max_tokens", type=int, default=None, help="Fit the whole answer in this many "
              "estimated tokens (300-1,000,000): the window is cut at a sentence; read on with --offset.")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON payload MCP and REST return.")
@config_option
@click.pass_context
def get(ctx: click.Context, doc_id: str, chunk: int | None, offset: int | None, max_chars: int | None,
        max_tokens: int | None, as_json: bool, config_path: str | None, root: str | None) -> None:
    """Print one document by id (a window of a long one)."""
    args = {"id": doc_id, "chunk": chunk, "offset": offset, "max_chars": max_chars, "max_tokens": max_tokens}
    doc, config = ask_server(ctx, "get", args)
    if doc is None:
        from context_harness.common.validation import parse_get

        request = parse_get(args)
        doc = run_with_harness(ctx, lambda h: h.get(request), config).model_dump(mode="json")
    if as_json:
        print_json(doc)
        return
    click.echo(f"# {doc['title'] or doc['source_id']}\n")
    click.echo(f"source: {doc['source']} · {doc['source_id']}")
    for label, key in (("url", "source_url"), ("updated", "updated_at"), ("version", "version")):
        if doc.get(key):
            click.echo(f"{label}: {doc[key]}")
    click.echo("")
    click.echo(doc["body"])
    window = doc.get("range")
    if doc.get("truncated") and window is not None:
        following = doc.get("next_offset")
        more = f"; next: ctx get {doc['id']} --offset {following}" if following is not None else ""
        click.echo(f"\n[characters {window['start']}-{window['end']} of {doc['total_chars']}{more}]", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON payload MCP and REST return.")
@config_option
@click.pass_context
def sources(ctx: click.Context, as_json: bool, config_path: str | None, root: str | None) -> None:
    """List sources with document counts and health."""
    response, config = ask_server(ctx, "sources", {})
    if response is None:
        response = run_with_harness(ctx, lambda h: h.sources(), config).model_dump(mode="json")
    if as_json:
        print_json(response)
        return
    from context_harness.models import live_state

    if not response["sources"]:
        click.echo("no sources configured")
    embedding = response["embedding"]
    for s in response["sources"]:
        state: str = s["status"]
        if s.get("status_reason") and s["status_reason"] != s.get("notes"):
            state += f" ({s['status_reason']})"
        embedded = f", {s['embedded_chunks']} embedded" if embedding.get("identity") or s.get("embedded_chunks") else ""
        click.echo(f"{s['name']}: {s['document_count']} documents, {s['chunk_count']} chunks{embedded}, {state}, "
                   f"last sync {s.get('last_sync') or 'never'}" + (f" — {s['notes']}" if s.get("notes") else "")
                   + (f" [from {s['origin']}]" if s.get("origin") else "") + live_state(s))
    for part in response.get("set_aside", []):
        what = "HTTP serving" if part["kind"] == "http" else f"{part['kind']} {part['name']}"
        click.echo(f"set aside: {what} — {part['message']}")
    for overlap in response.get("overlaps") or []:
        click.echo(f"warning: {overlap['message']}")
    click.echo(_embedder_line(embedding))
    if embedding.get("language_advice"):  # most documents in languages the model does not read
        click.echo(f"warning: {embedding['language_advice']['message']}")


def _embedder_line(embedding: dict[str, Any]) -> str:
    if embedding.get("provider") == "disabled":
        return "embeddings: disabled in the config (keyword search only)"
    line = f"embeddings: {embedding.get('identity') or embedding.get('provider')}"
    switch = embedding.get("switch")
    if switch:  # a model switch under way: searches use the stored vectors until it completes
        line += f"; {switch['text']} (searches use {embedding.get('stored_identity')} until then)"
    elif embedding.get("mismatch"):
        line += (f"; the stored vectors were made by {embedding.get('stored_identity')}, which searches use "
                 "until `ctx embed pending` (or a serving knowledge base) re-embeds every chunk for the new "
                 "model and swaps them; `ctx embed rebuild` re-embeds at once, without them meanwhile")
    return line


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@config_option
@click.pass_context
def stats(ctx: click.Context, as_json: bool, config_path: str | None, root: str | None) -> None:
    """Show index statistics."""
    result = run_with_harness(ctx, lambda h: h.stats())
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    for line in stats_lines(result):
        click.echo(line)


def stats_lines(stats: StatsOut) -> list[str]:
    """``ctx stats`` as readable text: counts, where the index is and how big, the embeddings."""
    embedding = stats.embedding
    lines = [f"documents: {stats.documents:,}", f"chunks: {stats.chunks:,}", f"sources: {stats.sources}",
             f"database: {stats.db_path} ({_size(stats.db_bytes)}; keyword index {_size(stats.index_bytes)}; "
             f"schema version {stats.schema_version})",
             f"last sync: {stats.last_sync or 'never (run `ctx sync`)'}", _embedder_line(embedding)]
    if embedding.get("provider") != "disabled" and "embedded_chunks" in embedding:
        lines.append(f"embedded chunks: {embedding.get('embedded_chunks', 0):,}, pending "
                     f"{embedding.get('pending_chunks', 0):,} (`ctx embed pending`), vectors "
                     f"{embedding.get('vectors', 0):,}")
    return lines


def _size(size: int) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:,} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1000  # type: ignore[assignment]
    raise AssertionError("unreachable")


@cli.command()
@click.option("--repair", is_flag=True, help="Fix what can be fixed from what is stored.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@config_option
@click.pass_context
def check(ctx: click.Context, repair: bool, as_json: bool, config_path: str | None, root: str | None) -> None:
    """Check that SQLite, the keyword index and the vectors agree; exit 1 while a problem remains."""
    import anyio

    from context_harness.core.face import check_installed

    config = required_config(ctx)
    result = anyio.run(check_installed, config, repair)
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        for problem in result.problems:
            click.echo(f"{'repaired' if problem.repaired else 'problem'}: {problem.message}")
        if result.consistent:
            click.echo(f"consistent: {result.documents} documents, {result.chunks} chunks, {result.vectors} vectors")
    if not result.consistent:
        ctx.exit(1)


@cli.command()
@click.argument("query", default="how do I connect Claude Desktop")
@progress_option
@click.option("--json", "as_json", is_flag=True, help="Print the search payload as JSON.")
def demo(query: str, progress_mode: str, quiet: bool, as_json: bool) -> None:
    """Index the bundled sample knowledge base and search it (a self-contained tour)."""
    import anyio

    from context_harness.core.face import Harness, demo_config
    from context_harness.models import SearchRequest

    try:
        config = demo_config()
    except HarnessError as error:  # a broken install without its sample
        fail(error)
    emit, stop = printer(progress_mode, quiet)
    if emit is not None and progress_mode != "json" and not config.db.path.exists():  # the first run, at once
        click.echo(f"indexing the sample knowledge base into {config.db.path.parent}: the first run embeds it "
                   "offline (10 s to a few minutes, by the machine); later runs take seconds", err=True)

    async def main() -> tuple[SyncReport, SearchResponse]:
        async with Harness.open(config) as harness:
            report = await harness.sync(progress=emit)
            if report.embedding_error is not None:  # the demo's own workspace, e.g. embedded by an older version
                report.embedding = await harness.embed(rebuild=True, progress=emit)
                report.embedding_error = None
            response = await harness.search(SearchRequest(query=query))
            return report, response

    try:
        report, response = anyio.run(main)
    except HarnessError as error:
        fail(error)
    finally:
        stop()
    if as_json:
        print_json(response.model_dump(mode="json"))
        return
    s = report.sources[0]
    click.echo(f"indexed the sample knowledge base: {s.added + s.updated + s.unchanged} documents "
               f"({config.db.path.parent})")
    if report.embedding is not None:
        click.echo(f"embedded {report.embedding.embedded} new chunks offline with {report.embedding.embedder}")
    click.echo(f'hybrid search (keyword + semantic): "{query}"\n')
    for i, r in enumerate(response.results[:5], 1):
        click.echo(f"{i}. {r.title}  [{r.source_id}]  score {r.score:.2f}")
        click.echo(f"   {r.snippet}\n")
    click.echo("next: `ctx init` in your own folder, then `ctx setup claude-desktop` "
               "(or claude-code, cursor, vscode) to connect a client.")


@cli.command()
@click.option("--http", "http", is_flag=True, help="Serve Streamable HTTP (/mcp) and the REST shim instead of stdio.")
@click.option("--bind", default=None, help="HTTP address (default [server] bind, 127.0.0.1:7331).")
@click.option("--agent", default=None, help="Expose only this agent's tools.")
@workspaces_option
@config_option
@click.pass_context
def serve(ctx: click.Context, http: bool, bind: str | None, agent: str | None, workspaces: str | None,
          config_path: str | None, root: str | None) -> None:
    """Serve MCP over stdio (default) or HTTP. `ctx serve mcp` is an alias of `--http`."""
    from context_harness.common.memory import limit_malloc_arenas
    from context_harness.server import run_server, run_stdio

    limit_malloc_arenas()  # before any thread starts (the services do it too, later, for other hosts)
    workspaces = workspaces or (ctx.find_root().obj or {}).get("workspaces")
    if workspaces is not None:
        _serve_workspaces(workspaces, http, bind, agent)
    elif http:
        run_server(required_config(ctx), http=http, bind=bind, agent=agent)
    elif run_stdio(lambda: required_config(ctx), agent) is not None:  # explained to the client, then closed
        sys.exit(ERROR_EXIT)


def _serve_workspaces(file: str, http: bool, bind: str | None, agent: str | None) -> None:
    """``--workspaces``: the registry's workspaces over stdio, or HTTP (not with ``--agent``)."""
    from context_harness.config import workspaces as registry
    from context_harness.server.workspaces import run_workspaces_http, run_workspaces_stdio

    if agent is not None:
        fail(BadRequest("--agent is not offered with --workspaces: serve that workspace alone (--config)"))
    path = registry.default_file() if file == DEFAULT_REGISTRY else Path(file).expanduser()
    if http:
        run_workspaces_http(path, bind)
    elif run_workspaces_stdio(path) is not None:
        sys.exit(ERROR_EXIT)


@cli.group()
def db() -> None:
    """Move the knowledge base between storage backends."""


@db.command("migrate")
@click.option("--to", "target", type=click.Choice(["postgres"]), required=True, help="The backend to copy into.")
@click.option("--url", default=None, help="The empty database's URL (default: $CTX_DATABASE_URL).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@config_option
@click.pass_context
def db_migrate(ctx: click.Context, target: str, url: str | None, as_json: bool, config_path: str | None,
               root: str | None) -> None:
    """Copy this embedded workspace (documents, chunks, vectors, embedder identity, sync outcomes, agent
    runs) into PostgreSQL, without embedding again; then set [db] backend = "postgres" and url in the config."""
    url = url or os.environ.get("CTX_DATABASE_URL")
    if not url:
        fail(BadRequest('`ctx db migrate --to postgres` needs the database: pass --url "postgresql://..." '
                        "or set CTX_DATABASE_URL"))
    from context_harness.common import redaction

    redaction.REDACTOR.add([url])  # a password in it must never be echoed
    report = run_with_harness(ctx, lambda h: h.migrate_to_postgres(url))
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        click.echo(f"copied {report.documents} documents, {report.chunks} chunks and {report.vectors} vectors "
                   f"({report.embedder or 'no embedder'}) to {report.target} in {report.seconds:g} s; now set "
                   '[db] backend = "postgres" and url = "${CTX_DATABASE_URL}"')


@cli.command()
@config_option
@click.pass_context
def watch(ctx: click.Context, config_path: str | None, root: str | None) -> None:
    """Keep the index fresh without serving: watch folders, run interval syncs, embed new chunks.
    Logs to stderr; Ctrl-C (or SIGTERM) stops."""
    import signal

    import anyio

    from context_harness.core.face import Harness

    if not log.isEnabledFor(logging.INFO):
        log.setLevel(logging.INFO)

    async def body(harness: Harness) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with harness.serving():
                labels = ", ".join(c.label for c in harness.connectors) or "no sources"
                log.info("watching %s (Ctrl-C stops)", labels)
                async for signum in signals:
                    log.info("stopping (%s)", signal.Signals(signum).name)
                    break

    run_with_harness(ctx, body)


def alias_serve_mcp(args: list[str]) -> list[str]:
    """`serve mcp` is the original's name for the HTTP server."""
    if "serve" in args:
        i = args.index("serve")
        if args[i + 1:i + 2] == ["mcp"]:
            return [*args[:i], "serve", "--http", *args[i + 2:]]
    return args
