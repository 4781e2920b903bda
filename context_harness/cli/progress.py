"""Progress of long work (sync, embedding, the vector graph, the first ``ctx demo``) on stderr.

``--progress auto`` (the default) draws a live bar on a terminal (rich: count, rate, elapsed, ETA)
and, elsewhere (a pipe, a log, CI), writes plain lines: when a large step starts (``LARGE`` items or
more), at most every ``LINE_SECONDS`` while a step runs, and when a step it spoke of ends; a short
sync says nothing. ``json`` writes the core's events as they come, one
JSON object a line; ``none`` (or ``--quiet``) writes nothing. stdout keeps only the command's result.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import click

MODES = ("auto", "bar", "lines", "json", "none")
LINE_SECONDS = 5.0
LARGE = 200  # a step of this many items says so when it starts (embedding them takes a while)
Emit = Callable[[dict[str, Any]], None]


def progress_option(fn: Any) -> Any:
    """``--progress MODE`` and ``--quiet`` (the same as ``--progress none``)."""
    fn = click.option("--quiet", "-q", is_flag=True, help="Print no progress (the same as --progress none).")(fn)
    return click.option("--progress", "progress_mode", type=click.Choice(MODES), default="auto", show_default=True,
                        help="Progress on stderr: a bar on a terminal, a line every few seconds elsewhere (auto), "
                             "JSON events (json), or nothing (none).")(fn)


def printer(mode: str, quiet: bool = False) -> tuple[Emit | None, Callable[[], None]]:
    """The progress callback for ``mode`` and the function that ends its display."""
    if quiet or mode == "none":
        return None, lambda: None
    if mode == "auto":
        mode = "bar" if sys.stderr.isatty() else "lines"
    if mode == "json":
        return _json_lines, lambda: None
    if mode == "bar":
        return _bar()
    lines = Lines(sys.stderr)
    return lines.emit, lambda: None


def step_label(source: str) -> str:
    return {"embeddings": "embed chunks", "vector graph": "build the vector graph",
            "documents": "copy documents"}.get(source, f"sync {source}")


def keyword_ready_line(event: dict[str, Any]) -> str:
    return (f"keyword search is ready ({event['documents']:,} documents); embedding {event['pending_chunks']:,} "
            "chunks for semantic search (Ctrl-C stops; `ctx embed pending` goes on where it stopped)")


def _json_lines(event: dict[str, Any]) -> None:
    sys.stderr.write(json.dumps(event) + "\n")
    sys.stderr.flush()


@dataclass
class _Step:
    total: int
    started: float
    said: float
    done: int = 0
    spoke: bool = False


@dataclass
class Lines:
    """Plain progress lines, for output that is not a terminal: what a log or CI keeps."""

    out: TextIO
    every: float = LINE_SECONDS
    clock: Callable[[], float] = time.monotonic
    steps: dict[str, _Step] = field(default_factory=dict)

    def emit(self, event: dict[str, Any]) -> None:
        kind, source, now = event.get("event"), event.get("source", ""), self.clock()
        if kind == "keyword_ready":
            self._say(keyword_ready_line(event))
        elif kind == "start":
            step = self.steps[source] = _Step(total=int(event.get("total") or 0), started=now, said=now)
            if step.total >= LARGE:
                self._say(f"{step_label(source)}: {step.total:,} to do", step)
        elif kind == "progress" and source in self.steps:
            step = self.steps[source]
            step.done = int(event.get("done") or 0)
            if now - step.said >= self.every and step.done < step.total:  # at the end, "done" speaks
                self._say(f"{step_label(source)}: {self._figures(step, now)}", step)
        elif kind == "done" and source in self.steps:
            step = self.steps.pop(source)
            if step.spoke:
                self._say(f"{step_label(source)}: done in {now - step.started:,.1f} s")

    @staticmethod
    def _figures(step: _Step, now: float) -> str:
        """``240/853 (28%), 31/s, about 20 s left``."""
        shown = f"{step.done:,}/{step.total:,}"
        if step.total:
            shown += f" ({100 * step.done // step.total}%)"
        elapsed = now - step.started
        if step.done and elapsed > 0:
            rate = step.done / elapsed
            shown += f", {rate:,.1f}/s"
            if step.total > step.done:
                shown += f", about {(step.total - step.done) / rate:,.0f} s left"
        return shown

    def _say(self, line: str, step: _Step | None = None) -> None:
        if step is not None:
            step.said, step.spoke = self.clock(), True
        self.out.write(line + "\n")
        self.out.flush()


def _bar() -> tuple[Emit, Callable[[], None]]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"),
                        TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    tasks: dict[str, Any] = {}
    progress.start()

    def emit(event: dict[str, Any]) -> None:
        source = event.get("source", "")
        if event["event"] == "keyword_ready":
            progress.console.print(keyword_ready_line(event))
        elif event["event"] == "start":
            tasks[source] = progress.add_task(step_label(source), total=event["total"] or 1, rate="")
        elif event["event"] == "progress" and source in tasks:
            progress.update(tasks[source], completed=event["done"])
            speed = progress.tasks[tasks[source]].speed
            if speed:
                progress.update(tasks[source], rate=f"{speed:,.0f}/s")
        elif event["event"] == "done" and source in tasks:
            progress.update(tasks[source], completed=progress.tasks[tasks[source]].total)
    return emit, progress.stop
