"""Progress of long work (sync, embedding, the vector graph, the first ``ctx demo``) on stderr.

``--progress auto`` (the default) draws a live bar on a terminal (rich: count, rate, elapsed, ETA)
and, elsewhere (a pipe, a log, CI), writes plain lines: when a large step starts (``LARGE`` items or
more), at most every ``LINE_SECONDS`` while a step runs (also while it is silent: a clone, a
listing, the model loading), and when a step it spoke of ends; a short sync says nothing.
``json`` writes the core's events as they come, one JSON object a line; ``none`` (or ``--quiet``)
writes nothing. stdout keeps only the command's result.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import click

MODES = ("auto", "bar", "lines", "json", "none")
LINE_SECONDS = 5.0
LARGE = 200  # a step of this many items says so when it starts (embedding them takes a while)
RATE_WINDOW = 20.0  # seconds of recent progress the rate and the time left are measured over
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
    return lines.emit, lines.keep_time()


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
    # (time, done) of recent progress; the first is the last one at or before the window's start
    samples: deque[tuple[float, int]] = field(default_factory=deque)

    def measure(self, now: float, done: int) -> None:
        if not self.samples:
            self.samples.append((self.started, 0))
        self.done = done
        self.samples.append((now, done))
        while len(self.samples) > 2 and self.samples[1][0] <= now - RATE_WINDOW:
            self.samples.popleft()

    def rate(self, now: float) -> float:
        """Items a second over the last ``RATE_WINDOW`` seconds (since the start, before that): a run
        that slows down (a loaded machine, longer texts) is seen within the window, not diluted by
        its whole past (issue 50: 211 s said, 510 s taken)."""
        since, then = self.samples[0] if self.samples else (self.started, 0)
        return (self.done - then) / (now - since) if now > since else 0.0


@dataclass
class Lines:
    """Plain progress lines, for output that is not a terminal: what a log or CI keeps."""

    out: TextIO
    every: float = LINE_SECONDS
    clock: Callable[[], float] = time.monotonic
    steps: dict[str, _Step] = field(default_factory=dict)  # by label, in the order they started
    lock: threading.Lock = field(default_factory=threading.Lock)  # events come from worker threads

    def emit(self, event: dict[str, Any]) -> None:
        with self.lock:
            self._take(event.get("event"), event.get("source", ""), event, self.clock())

    def _take(self, kind: Any, source: str, event: dict[str, Any], now: float) -> None:
        label = step_label(source)
        if kind == "keyword_ready":
            self._say(keyword_ready_line(event))
        elif kind == "scan":  # listing a folder, cloning a repository, an S3 listing: no count yet
            self.steps[f"scan {source}"] = _Step(total=0, started=now, said=now)
        elif kind == "start":
            self._end(f"scan {source}", now)
            step = self.steps[label] = _Step(total=int(event.get("total") or 0), started=now, said=now)
            if step.total >= LARGE:
                self._say(f"{label}: {step.total:,} to do", step)
        elif kind == "progress" and label in self.steps:
            step = self.steps[label]
            step.measure(now, int(event.get("done") or 0))
            if now - step.said >= self.every and step.done < step.total:  # at the end, "done" speaks
                self._say(f"{label}: {self._figures(step, now)}", step)
        elif kind == "done":
            self._end(f"scan {source}", now)
            self._end(label, now)
        elif kind == "ocr":
            self._ocr(source, event, now)

    def _ocr(self, source: str, event: dict[str, Any], now: float) -> None:
        """A page read by OCR: said for a document's first page, a skipped page, then every ``every`` s."""
        key = f"ocr {source} {event.get('document')}"
        page, pages = int(event.get("page") or 0), int(event.get("pages") or 0)
        step = self.steps.get(key)
        if step is None:
            step = self.steps[key] = _Step(total=pages, started=now, said=now - self.every)
        step.measure(now, page)
        if event.get("skipped") or now - step.said >= self.every or page >= pages:
            what = f"skipped page {page} ({event['skipped']})" if event.get("skipped") else f"page {page}/{pages}"
            self._say(f"OCR {source}: {event.get('document')}: {what}, {event.get('seconds', 0):.1f} s", step)
        if page >= pages:
            self.steps.pop(key, None)

    def _end(self, label: str, now: float) -> None:
        step = self.steps.pop(label, None)
        if step is not None and step.spoke:
            self._say(f"{label}: done in {now - step.started:,.1f} s")

    def beat(self) -> None:
        """Say how long the latest step has run when it has been silent ``every`` seconds (a clone, a
        listing, the model loading before the first batch)."""
        with self.lock:
            now = self.clock()
            if not self.steps:
                return
            label, step = list(self.steps.items())[-1]
            if now - step.said >= self.every:
                figures = f"{self._figures(step, now)}, " if step.total else ""
                self._say(f"{label}: {figures}still working, {now - step.started:,.0f} s so far", step)

    def keep_time(self, tick: float = 1.0) -> Callable[[], None]:
        """Beat every ``tick`` seconds in a daemon thread; returns the function that stops it."""
        stopped = threading.Event()

        def run() -> None:
            while not stopped.wait(tick):
                self.beat()

        thread = threading.Thread(target=run, name="progress lines", daemon=True)
        thread.start()

        def stop() -> None:
            stopped.set()
            thread.join(timeout=5)
        return stop

    @staticmethod
    def _figures(step: _Step, now: float) -> str:
        """``240/853 (28%), 31/s, about 20 s left``."""
        shown = f"{step.done:,}/{step.total:,}"
        if step.total:
            shown += f" ({100 * step.done // step.total}%)"
        rate = step.rate(now)
        if step.done and rate > 0:
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
                        TimeRemainingColumn(), console=Console(stderr=True), transient=True,
                        speed_estimate_period=RATE_WINDOW)  # the rate and ETA over the last 20 s, as in lines
    tasks: dict[str, Any] = {}
    progress.start()

    def task(task_id: Any) -> Any:  # by id: positions in progress.tasks move when a task is removed
        return next(t for t in progress.tasks if t.id == task_id)

    def emit(event: dict[str, Any]) -> None:
        source = event.get("source", "")
        if event["event"] in ("start", "done") and f"scan {source}" in tasks:
            progress.remove_task(tasks.pop(f"scan {source}"))
        if event["event"] == "keyword_ready":
            progress.console.print(keyword_ready_line(event))
        elif event["event"] == "scan":  # no count yet: a pulsing bar, with the time it has taken
            tasks[f"scan {source}"] = progress.add_task(f"scan {source}", total=None, rate="")
        elif event["event"] == "start":
            tasks[source] = progress.add_task(step_label(source), total=event["total"] or 1, rate="")
        elif event["event"] == "progress" and source in tasks:
            progress.update(tasks[source], completed=event["done"])
            speed = task(tasks[source]).speed
            if speed:
                progress.update(tasks[source], rate=f"{speed:,.0f}/s")
        elif event["event"] == "done" and source in tasks:
            progress.update(tasks[source], completed=task(tasks[source]).total)
        elif event["event"] == "ocr":  # a bar per document read by OCR, gone once its last page is read
            key = f"ocr {source} {event.get('document')}"
            if key not in tasks:
                tasks[key] = progress.add_task(f"OCR {event.get('document')}", total=event.get("pages") or 1, rate="")
            progress.update(tasks[key], completed=event.get("page") or 0, rate=f"{event.get('seconds', 0):.1f} s/page")
            if (event.get("page") or 0) >= (event.get("pages") or 0):
                progress.remove_task(tasks.pop(key))
    return emit, progress.stop
