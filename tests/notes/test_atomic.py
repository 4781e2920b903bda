"""Atomic note writes on real files: line endings, BOM and mode kept, overwrite refused, and a
SIGKILL battery: a writer killed at random moments leaves the old or the new file, never a part."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from context_harness.errors import BadRequest
from context_harness.notes import edits
from context_harness.notes.atomic import TEMP_PREFIX, Text, encode, read_text, write_atomic


def test_crlf_and_bom_are_kept_through_an_edit(tmp_path: Path) -> None:
    path = tmp_path / "n.md"
    path.write_bytes("\ufeff# Title\r\n\r\nbody\r\n".encode())
    os.chmod(path, 0o640)
    note = read_text(path)
    assert (note.crlf, note.bom, note.text) == (True, True, "# Title\n\nbody\n")
    write_atomic(path, encode(Text(edits.append(note.text, "more"), note.crlf, note.bom)))
    assert path.read_bytes() == "\ufeff# Title\r\n\r\nbody\r\n\r\nmore\r\n".encode()
    assert path.stat().st_mode & 0o777 == 0o640


def test_non_utf8_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "n.md"
    path.write_bytes(b"caf\xe9\n")
    with pytest.raises(BadRequest, match="not UTF-8"):
        read_text(path)


def test_overwrite_is_refused_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "n.md"
    write_atomic(path, b"one\n", overwrite=False)
    with pytest.raises(BadRequest, match="overwrite"):
        write_atomic(path, b"two\n", overwrite=False)
    write_atomic(path, b"two\n")
    assert path.read_bytes() == b"two\n"
    assert [p.name for p in tmp_path.iterdir()] == ["n.md"]


def test_replace_section_and_find_replace() -> None:
    text = "# A\n\n## B\nold\n\n## C\nkeep\n"
    assert edits.replace_section(text, "A > B", "new") == "# A\n\n## B\nnew\n\n## C\nkeep\n"
    with pytest.raises(BadRequest, match="no heading"):
        edits.replace_section(text, "Z", "x")
    with pytest.raises(BadRequest, match="occurs 2 times"):
        edits.find_replace("x x", "x", "y", 1)
    assert edits.find_replace("x x", "x", "y", 2) == "y y"
    assert edits.prepend("---\ntitle: t\n---\nbody\n", "top") == "---\ntitle: t\n---\ntop\nbody\n"


WRITER = """
import sys
from pathlib import Path
from context_harness.notes.atomic import write_atomic
path = Path(sys.argv[1])
contents = [b"A" * 1_000_000, b"B" * 1_000_000]
i = 0
print("ready", flush=True)
while True:
    write_atomic(path, contents[i % 2])
    i += 1
"""


@pytest.mark.slow
def test_a_writer_killed_at_random_moments_never_leaves_a_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    old, new = b"A" * 1_000_000, b"B" * 1_000_000
    write_atomic(path, old)
    rng = random.Random(29)
    started = time.monotonic()
    for _ in range(30):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE)
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0, 0.05))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        assert path.read_bytes() in (old, new)
    assert time.monotonic() - started < 30
    write_atomic(path, b"after\n")
    assert path.read_bytes() == b"after\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(TEMP_PREFIX)]
