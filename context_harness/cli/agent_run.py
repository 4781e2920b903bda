"""``ctx agent run / runs / show``: an agent driven by a chat model through its tools, and its record.

Part of the CLI rim, over ``Harness.run_agent`` (``core/running.py``). While a run goes, each step is
a line on stderr (the model's calls, the tools' outcomes, approvals); the answer goes to stdout, or
with ``--json`` the run's whole record. On a terminal each write asks ``yes / no / always``; elsewhere
a write is refused unless ``--yes`` or the agent's ``approve = "writes"``. Exit codes: 0 the model
answered, 1 the run failed or hit its budget (the reason on stderr), 130 stopped by Ctrl-C (or SIGTERM,
which stops a run the same way). A run whose process died (kill -9) shows as ``interrupted``.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, Any

import click

from context_harness.cli.agents import parse_args
from context_harness.cli.support import config_option, print_json, run_with_harness
from context_harness.common.terminal import shown

if TYPE_CHECKING:
    from context_harness.core.face import Approval, Harness

ARGUMENTS_SHOWN = 160  # characters of a call's arguments in a step's line
RESULT_SHOWN = 160  # characters of a tool's result in a step's line
EXIT = {"finished": 0, "stopped": 130}
PROMPT = "  allow? [y]es / [n]o / [a]lways for this run [n]: "
ANSWERS = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "a": "always", "always": "always"}


@click.command("run")
@click.argument("agent_name", metavar="AGENT")
@click.argument("task")
@click.option("--arg", "args", multiple=True, metavar="K=V", help="An argument of the agent (repeatable).")
@click.option("--model", default=None, metavar="NAME", help="The [models.NAME] to use (overrides the agent's).")
@click.option("--yes", is_flag=True, help="Approve every write without asking (scripts, cron).")
@click.option("--max-steps", type=click.IntRange(1, 1000), default=None, help="Model replies the run may take.")
@click.option("--max-seconds", type=click.FloatRange(0, 86_400, min_open=True), default=None,
              help="Seconds the run may take.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's record as JSON (steps still go to stderr).")
@click.option("-q", "--quiet", is_flag=True, help="No step lines on stderr.")
@config_option
@click.pass_context
def run(ctx: click.Context, agent_name: str, task: str, args: tuple[str, ...], model: str | None, yes: bool,
        max_steps: int | None, max_seconds: float | None, as_json: bool, quiet: bool, config_path: str | None,
        root: str | None) -> None:
    """Run AGENT on TASK: its prompt as system message, its tools offered to the model, each tool call
    run as over MCP, until the model answers or the budget ends the run. The record is kept
    (`ctx agent runs`, `ctx agent show RUN`)."""
    from context_harness.core.face import RunRequest

    request = RunRequest(agent=agent_name, task=task, arguments=parse_args(args), model=model, yes=yes,
                         max_steps=max_steps, max_seconds=max_seconds)
    ask = _ask if sys.stdin.isatty() and sys.stderr.isatty() and not yes else None
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job (`cmd &`) ignores it otherwise
    signal.signal(signal.SIGTERM, _as_ctrl_c)  # `timeout`, systemd, kill: the record says stopped too

    async def body(harness: Harness) -> dict[str, Any]:
        return await harness.run_agent(request, approver=ask, on_step=None if quiet else _echo_step)

    record = run_with_harness(ctx, body)
    if as_json:
        print_json(record)
    elif record.get("answer"):
        answer = record["answer"].rstrip()
        click.echo(shown(answer) if sys.stdout.isatty() else answer)  # a pipe gets the text as the model wrote it
    status = record["status"]
    if status != "finished":
        click.echo(shown(f"run {record['id']} {status}: {record.get('reason')}"), err=True)
    sys.exit(EXIT.get(status, 1))


def _as_ctrl_c(signum: int, frame: Any) -> None:
    os.kill(os.getpid(), signal.SIGINT)


async def _ask(approval: Approval) -> str:
    """A person at the terminal approves one call: yes, no, or always (this tool, for this run). What
    was typed before the call was shown (while the model was thinking, or a doubled ``y``) is thrown
    away first, so only an answer given to this prompt counts; the arguments are shown with control
    and bidirectional characters escaped."""
    click.echo(f"  {shown(approval.tool, lines=False)} {approval.why}: {shown(approval.shown(), lines=False)}",
               err=True)
    while True:
        _discard_typed_ahead()
        click.echo(PROMPT, err=True, nl=False)
        try:
            line = await _read_line()
        except BaseException:  # Ctrl-C, or the run's max_seconds ran out: the next line starts afresh
            click.echo("", err=True)
            raise
        if line is None:  # stdin closed: no
            click.echo("", err=True)
            return "no"
        answer = line.strip().lower() or "n"
        if answer in ANSWERS:
            return ANSWERS[answer]
        click.echo(f"  {answer!r} is not one of y, n, a", err=True)


def _discard_typed_ahead() -> None:
    """Flush what the terminal holds unread (POSIX ``tcflush``; a no-op elsewhere)."""
    try:
        import termios

        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):  # not a terminal after all, or no termios (Windows)
        return


async def _read_line() -> str | None:
    """A line typed at the terminal (None at its end). Read on the event loop, not in a thread, so
    Ctrl-C at the prompt stops the run at once (a thread blocked on stdin held the process)."""
    import anyio

    if os.name == "nt":  # no waiting on a console handle there
        text = await anyio.to_thread.run_sync(sys.stdin.readline)
        return text or None
    fd = sys.stdin.fileno()
    data = b""
    while b"\n" not in data:
        await anyio.wait_readable(fd)
        piece = os.read(fd, 1024)
        if not piece:
            return data.decode("utf-8", "replace") if data else None
        data += piece
    return data.split(b"\n", 1)[0].decode("utf-8", "replace")  # one line: a second one typed on is not kept


def _echo_step(step: dict[str, Any]) -> None:
    line = describe_step(step)
    if line is not None:
        click.echo(shown(line), err=True)


def describe_step(step: dict[str, Any]) -> str | None:
    """One line for a step of a run (streamed while it goes, and replayed by `ctx agent show`)."""
    kind = step.get("kind")
    if kind == "start":
        missing = f" (not offered: {', '.join(step['not_offered'])})" if step.get("not_offered") else ""
        return f"· tools: {', '.join(step.get('tools') or []) or 'none'}{missing}"
    if kind == "note":
        return f"· {step.get('text')}"
    if kind == "model":
        calls = step.get("calls") or []
        tokens = step.get("tokens") or {}
        spent = f"{tokens.get('prompt', 0) + tokens.get('completion', 0):,} tokens, {step.get('seconds', 0):g} s"
        if not calls:
            return f"· the model answered ({spent})"
        return "\n".join([f"· the model calls {len(calls)} tool{'s' if len(calls) != 1 else ''} ({spent})",
                          *(f"→ {c['tool'] or '(no name)'} {_cut(c.get('arguments', ''), ARGUMENTS_SHOWN)}"
                            for c in calls)])
    if kind == "approval":
        if step.get("approved"):
            return f"  {step.get('tool')}: approved by {step.get('by')}"
        return f"  {step.get('tool')}: not approved ({step.get('by')})"
    if kind == "tool":
        took = f" ({step['seconds']:g} s)" if "seconds" in step else ""
        return f"  {step.get('outcome')}{took}: {_cut(step.get('result', ''), RESULT_SHOWN)}"
    if kind == "fault":
        return f"! {step.get('text')}"
    if kind == "end":
        return f"= {step.get('status')}: {step.get('reason')}"
    return None


def _cut(text: str, most: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= most else flat[:most - 1] + "…"


@click.command("runs")
@click.option("--agent", "agent_name", default=None, help="Only this agent's runs.")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True, help="How many runs.")
@click.option("--json", "as_json", is_flag=True, help="Print the runs (records without their steps) as JSON.")
@config_option
@click.pass_context
def runs(ctx: click.Context, agent_name: str | None, limit: int, as_json: bool, config_path: str | None,
         root: str | None) -> None:
    """The newest agent runs first: id, start, agent, status, steps, tokens and task."""

    async def body(harness: Harness) -> list[dict[str, Any]]:
        return await harness.agent_runs(limit, agent_name)

    found = run_with_harness(ctx, body)
    if as_json:
        print_json({"runs": found})
        return
    if not found:
        click.echo("No agent runs yet: `ctx agent run AGENT \"TASK\"` starts one.")
        return
    for entry in found:
        tokens = entry.get("tokens") or {}
        spent = tokens.get("prompt", 0) + tokens.get("completion", 0)
        click.echo(f"{entry['id']}  {entry['started_at']}  {entry['agent']}  {entry['status']}  "
                   f"{entry.get('step_count', 0)} steps  {spent:,} tokens  {_cut(entry.get('task', ''), 60)}")


@click.command("show")
@click.argument("run_id", metavar="RUN")
@click.option("--json", "as_json", is_flag=True, help="Print the whole record as JSON.")
@config_option
@click.pass_context
def show(ctx: click.Context, run_id: str, as_json: bool, config_path: str | None, root: str | None) -> None:
    """Replay run RUN (its id, or the start of it): the task, every step, and the answer."""

    async def body(harness: Harness) -> dict[str, Any]:
        return await harness.agent_run_record(run_id)

    record = run_with_harness(ctx, body)
    if as_json:
        print_json(record)
        return
    tokens = record.get("tokens") or {}
    click.echo(f"run {record['id']}: agent {record['agent']}, model {record['model']}, started {record['started_at']}")
    click.echo(f"task: {record['task']}")
    for step in record.get("steps") or []:
        line = describe_step(step)
        if line is not None:
            click.echo(shown(line))
    click.echo(f"tokens: {tokens.get('prompt', 0):,} prompt, {tokens.get('completion', 0):,} completion")
    if record.get("answer"):
        click.echo("\n--- answer ---")
        click.echo(shown(record["answer"].rstrip()))


__all__ = ["describe_step", "run", "runs", "show"]
