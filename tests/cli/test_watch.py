"""`ctx watch` as a user runs it: a subprocess that keeps the index fresh until a signal stops it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def search(config: Path, word: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "context_harness", "search", word, "--mode", "keyword",
                           "--config", str(config), "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [r["source_id"] for r in json.loads(done.stdout)["results"]]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_watch_picks_up_a_new_file_and_stops_cleanly(workspace, stop: signal.Signals) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "context_harness", "watch", "--config", str(workspace.config_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        assert proc.stderr is not None
        while "watching filesystem:docs" not in proc.stderr.readline():
            assert time.monotonic() < deadline and proc.poll() is None, "ctx watch did not start"
        workspace.write("fresh.md", "# Fresh\n\nbilby burrows\n")
        while search(workspace.config_path, "bilby") != ["fresh.md"]:
            assert time.monotonic() < deadline, "the new file was not indexed"
            time.sleep(0.2)
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out == ""  # logs go to stderr
    assert f"stopping ({stop.name})" in err and "Traceback" not in err
