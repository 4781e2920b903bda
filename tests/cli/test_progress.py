"""Progress where no terminal is (a pipe, a log, CI): plain lines with count, rate and time left, at
most every few seconds; short steps say nothing. And the CLI's --progress/--quiet switches."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

from context_harness.cli.progress import LINE_SECONDS, Lines


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_long_step_says_what_it_does_every_few_seconds_with_rate_and_time_left() -> None:
    out, clock = io.StringIO(), Clock()
    lines = Lines(out, clock=clock)
    lines.emit({"event": "start", "source": "embeddings", "total": 1000})
    for done in range(50, 1001, 50):  # 50 chunks a second
        clock.now += 1.0
        lines.emit({"event": "progress", "source": "embeddings", "done": done, "total": 1000})
    lines.emit({"event": "done", "source": "embeddings"})
    said = out.getvalue().splitlines()
    assert said[0] == "embed chunks: 1,000 to do"
    assert said[1] == "embed chunks: 250/1,000 (25%), 50.0/s, about 15 s left"
    assert said[-1] == "embed chunks: done in 20.0 s"
    # the start, a line every LINE_SECONDS (never one a batch; none at 100%: "done" says it), the end
    assert len(said) == 1 + (20 // int(LINE_SECONDS) - 1) + 1


def test_a_short_step_says_nothing() -> None:
    out, clock = io.StringIO(), Clock()
    lines = Lines(out, clock=clock)
    lines.emit({"event": "scan", "source": "filesystem:docs"})
    lines.emit({"event": "start", "source": "filesystem:docs", "total": 3})
    clock.now += 0.2
    lines.emit({"event": "progress", "source": "filesystem:docs", "done": 3, "total": 3})
    lines.emit({"event": "done", "source": "filesystem:docs", "added": 3})
    assert out.getvalue() == ""


def test_a_small_step_that_runs_long_still_speaks() -> None:
    out, clock = io.StringIO(), Clock()
    lines = Lines(out, clock=clock)
    lines.emit({"event": "start", "source": "s3:bucket", "total": 10})
    clock.now += 6
    lines.emit({"event": "progress", "source": "s3:bucket", "done": 3, "total": 10})
    lines.emit({"event": "done", "source": "s3:bucket"})
    assert out.getvalue().splitlines() == ["sync s3:bucket: 3/10 (30%), 0.5/s, about 14 s left",
                                           "sync s3:bucket: done in 6.0 s"]


def ctx(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "context_harness", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_quiet_and_json_switches(sample_docs) -> None:
    config = str(sample_docs.config_path)
    events = ctx("sync", "--config", config, "--progress", "json")
    assert [json.loads(line)["event"] for line in events.stderr.splitlines()][-1] == "done"
    quiet = ctx("sync", "--config", config, "--full", "--quiet", "--progress", "json")  # --quiet wins
    assert quiet.returncode == 0 and quiet.stderr == ""
    lines = ctx("sync", "--config", config, "--progress", "lines")  # 3 documents: nothing to report
    assert lines.returncode == 0 and lines.stderr == ""


def test_a_silent_step_still_says_how_long_it_has_run() -> None:
    """A clone, an S3 listing or the model loading sends no event for a while: the heartbeat speaks."""
    out, clock = io.StringIO(), Clock()
    lines = Lines(out, clock=clock)
    lines.emit({"event": "scan", "source": "git:handbook"})
    clock.now += 3
    lines.beat()
    assert out.getvalue() == ""  # not yet: short silences say nothing
    clock.now += 3
    lines.beat()
    lines.beat()  # once per LINE_SECONDS, not per beat
    lines.emit({"event": "start", "source": "git:handbook", "total": 4})
    lines.emit({"event": "start", "source": "embeddings", "total": 900})
    clock.now += 6
    lines.beat()  # the model loads: no batch done yet
    assert out.getvalue().splitlines() == [
        "scan git:handbook: still working, 6 s so far",
        "scan git:handbook: done in 6.0 s",
        "embed chunks: 900 to do",
        "embed chunks: 0/900 (0%), still working, 6 s so far"]


def test_the_heartbeat_thread_beats_and_stops() -> None:
    out, clock = io.StringIO(), Clock()
    lines = Lines(out, clock=clock)
    lines.emit({"event": "scan", "source": "s3:bucket"})
    clock.now += LINE_SECONDS
    stop = lines.keep_time(tick=0.01)
    deadline = time.monotonic() + 10
    while not out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert out.getvalue() == "scan s3:bucket: still working, 5 s so far\n"


def test_on_a_terminal_a_bar_is_drawn(sample_docs) -> None:
    """On a terminal (a pty here) `auto` draws rich's bar: the scan pulses, then the sync counts."""
    import os
    import pty

    main, tty = pty.openpty()
    done = subprocess.run([sys.executable, "-m", "context_harness", "sync", "--full", "--no-embed", "--config",
                           str(sample_docs.config_path)], stdin=tty, stdout=tty, stderr=tty, timeout=120)
    os.close(tty)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the other end is closed and drained
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    text = seen.decode("utf-8", "replace")
    assert done.returncode == 0, text
    assert "sync filesystem:docs" in text and "3/3" in text and "Traceback" not in text
    assert "filesystem:docs: 3 added" in text  # the summary on stdout, after the bar went


def test_the_time_left_follows_the_measured_rate_within_a_minute(tmp_path: Path) -> None:
    """A real embedding run (``Harness.embed``, SQLite, the fake embedder slowed to a known rate on a
    clock of its own) that starts at 100 chunks/s and falls to 20/s (the machine gets loaded): the time
    left said after 60 s at the new rate is within 15 % of the truth. Before, it came from the whole
    run's average and stayed far too low (issue 50: 211 s said, 510 s real)."""
    import anyio
    import numpy as np

    from context_harness.core.harness import Harness
    from context_harness.embedding import fake
    from context_harness.embedding.providers import default_providers
    from support.workspace import Workspace

    clock = Clock()

    class Slowed(fake.FakeEmbedder):
        """Advances the clock by the time its texts take: 100/s for the first 600, then 20/s."""

        seen = 0

        def _embed(self, texts: list[str]) -> np.ndarray:
            for _ in texts:
                clock.now += 0.01 if Slowed.seen < 600 else 0.05
                Slowed.seen += 1
            return super()._embed(texts)

    fake.register()
    default_providers.register("fake", lambda config: Slowed(), replace=True)
    try:
        workspace = Workspace(tmp_path)
        for i in range(240):  # 240 notes of 10 chunks each
            workspace.write(f"n{i:03}.md", "".join(f"# Part {j}\n\n{f'word{i * 10 + j} ' * 60}\n\n"
                                                   for j in range(10)))
        workspace.config_path.write_text('[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "fake"\n'
                                         '[chunking]\nmax_tokens = 90\n[connectors.filesystem.docs]\nroot = "docs"\n',
                                         encoding="utf-8")
        out = io.StringIO()
        lines = Lines(out, clock=clock)

        async def main() -> None:
            async with Harness.open(workspace.config()) as harness:
                await harness.sync(embed=False)
                await harness.embed(progress=lines.emit, batch_size=4)

        anyio.run(main)
    finally:
        default_providers.register("fake", lambda config: fake.FakeEmbedder(config.dims or fake.DIMS), replace=True)
    total = Slowed.seen
    assert total >= 1500, total
    said = [line for line in out.getvalue().splitlines() if "s left" in line]
    slow_since = 600 * 0.01  # when the rate fell
    checked = 0
    for line in said:
        done = int(line.split(": ")[1].split("/")[0].replace(",", ""))
        at = 600 * 0.01 + (done - 600) * 0.05 if done > 600 else done * 0.01
        if at - slow_since < 60:
            continue
        left = float(line.split("about ")[1].split(" s left")[0].replace(",", ""))
        truth = (total - done) * 0.05
        assert abs(left - truth) <= 0.15 * truth, (line, truth)
        checked += 1
    assert checked >= 2, said


def test_ocr_pages_are_said_first_skipped_and_last_then_every_few_seconds() -> None:
    out, clock = io.StringIO(), Clock()
    lines = Lines(out, clock=clock)
    page = {"event": "ocr", "source": "filesystem:docs", "document": "scans/book.pdf", "pages": 4}
    for number, seconds, skipped in ((1, 3.2, None), (2, 2.9, None), (3, 60.0, "ocr_timeout"), (4, 3.0, None)):
        clock.now += seconds
        lines.emit({**page, "page": number, "seconds": seconds, "skipped": skipped})
    assert out.getvalue().splitlines() == [
        "OCR filesystem:docs: scans/book.pdf: page 1/4, 3.2 s",
        "OCR filesystem:docs: scans/book.pdf: skipped page 3 (ocr_timeout), 60.0 s",
        "OCR filesystem:docs: scans/book.pdf: page 4/4, 3.0 s"]
    assert lines.steps == {}  # the document's step ends with its last page


def test_the_bar_takes_ocr_pages() -> None:
    from context_harness.cli.progress import _bar

    emit, stop = _bar()
    try:
        emit({"event": "start", "source": "filesystem:docs", "total": 1})
        for number in (1, 2):
            emit({"event": "ocr", "source": "filesystem:docs", "document": "scan.pdf", "page": number, "pages": 2,
                  "seconds": 1.5, "skipped": None})
        emit({"event": "done", "source": "filesystem:docs"})
    finally:
        stop()
