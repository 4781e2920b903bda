"""``common/lineage.py``: which processes are launchers, the lineage of a real process started through
one, and what ``gone`` says of a launcher that is not the process it was (real processes; the stdio
server's end-to-end behaviour is in ``tests/e2e/test_orphans.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from context_harness.common.lineage import Lineage, ParentWatch, Process, is_launcher, program

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
unix = pytest.mark.skipif(sys.platform == "win32", reason="Windows does not reparent orphans: nothing is watched")


@pytest.mark.parametrize(("argv", "launcher"), [
    (["uv", "tool", "run", "context-harness"], True),
    (["/home/me/.local/bin/uvx", "context-harness"], True),
    (["C:\\Users\\me\\.local\\bin\\uvx.exe", "context-harness"], True),
    (["node", "/usr/lib/node_modules/npm/bin/npx-cli.js", "-y", "pkg"], True),
    (["/usr/bin/python3", "/home/me/.local/bin/pipx", "run", "context-harness"], True),
    (["sh", "-c", "context-harness; exit $?"], True),
    (["bash", "-lc", "ctx serve"], True),
    (["/bin/sh", "/home/me/bin/ctx-wrapper.sh"], True),  # a wrapper script that does not exec
    (["bash", "-i"], False),
    (["python3", "-m", "uv", "tool", "run", "context-harness"], True),
    (["npm", "exec", "pkg"], True),  # npm's title, as /proc shows it once npm has set it
    (["node", "/opt/claude-code/cli.js"], False),  # a client written in node is the client
    (["-bash"], False),  # a login shell a person types in
    (["/usr/bin/zsh", "--login"], False),
    (["python3", "-m", "pytest"], False),
    (["/Applications/Claude.app/Contents/MacOS/Claude"], False),
    ([], False),
])
def test_launchers_are_told_by_their_arguments(argv: list[str], launcher: bool) -> None:
    assert is_launcher(argv) is launcher


def test_program_names_the_command_a_word_runs() -> None:
    assert [program(w) for w in ("/usr/lib/node_modules/npm/bin/npx-cli.js", "-bash", "UV.EXE", "python3.11")] == [
        "npx", "bash", "uv", "python3.11"]


PRINT_LINEAGE = """
import json, os
from context_harness.common.lineage import Lineage
lineage = Lineage.of(os.getppid())
print(json.dumps({"client": lineage.client, "launchers": [p.pid for p in lineage.launchers],
                  "gone": lineage.gone()}))
"""
CLIENT = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


@linux
def test_the_lineage_of_a_process_started_through_a_launcher_reaches_the_client(tmp_path: Path) -> None:
    uv = tmp_path / "uv"  # named as uv is: a launcher that stays alive while what it started runs
    uv.write_text(f"#!{sys.executable}\n{CLIENT}\n", encoding="utf-8")
    uv.chmod(0o755)
    through = subprocess.run([sys.executable, "-c", CLIENT, "sh", "-c", f'"{uv}" "$@"; exit $?', "sh",
                              sys.executable, "-c", PRINT_LINEAGE], capture_output=True, text=True, timeout=60)
    seen = json.loads(through.stdout)
    uv_pid, sh_pid = seen["launchers"]
    assert seen["client"].startswith("python") and seen["client"].endswith(f" through sh (pid {sh_pid}) through uv "
                                                                           f"(pid {uv_pid})")
    assert len(seen["launchers"]) == 2 and seen["gone"] is None
    direct = json.loads(subprocess.run([sys.executable, "-c", CLIENT, sys.executable, "-c", PRINT_LINEAGE],
                                       capture_output=True, text=True, timeout=60).stdout)
    assert direct["launchers"] == [] and direct["gone"] is None


@linux
def test_a_launcher_is_gone_when_its_pid_is_another_process_or_has_another_parent() -> None:
    import os

    with subprocess.Popen(["sleep", "60"]) as child:
        try:
            real = Lineage.of(child.pid)  # not our parent: the watch of it says so at once
            assert real is not None and real.gone() is not None and "is gone" in (real.gone() or "")
            started = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]

            def lineage(started_at: str, parent: int) -> Lineage:
                return Lineage(os.getppid(), (Process(child.pid, parent, started_at, ("uv",)),), "test")

            assert lineage(started, os.getpid()).gone() is None
            assert lineage(str(int(started) + 1), os.getpid()).gone() == f"the launcher uv (pid {child.pid}) is gone"
            assert "is gone" in (lineage(started, os.getpid() + 1).gone() or "")
        finally:
            child.kill()
    assert lineage(started, os.getpid()).gone() == f"the launcher uv (pid {child.pid}) is gone"  # reaped


@unix
def test_a_watch_calls_on_gone_once_with_the_reason() -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as child:
        try:
            reasons: list[str] = []
            called = threading.Event()

            def on_gone(reason: str) -> None:
                reasons.append(reason)
                called.set()

            # the child is not this process's parent: as if ours had died and left us to init
            ParentWatch(child.pid, on_gone, interval=0.05, backstop=10**6).start()
            assert called.wait(30)
            threading.Event().wait(0.3)
            assert len(reasons) == 1 and reasons[0].startswith("the process that started this one (python")
        finally:
            child.kill()


STUCK = """
import os, sys, time
from context_harness.common.lineage import ParentWatch
# A parent that is not ours (as if ours had died) and a shutdown that never ends: the backstop ends us.
ParentWatch(int(sys.argv[1]), lambda reason: time.sleep(3600), interval=0.05, backstop=0.5).start()
time.sleep(60)
"""


@unix
def test_a_shutdown_that_does_not_end_is_cut_short_by_the_backstop() -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        try:
            began = time.monotonic()
            stuck = subprocess.run([sys.executable, "-c", STUCK, str(other.pid)], capture_output=True, text=True,
                                   timeout=60)
            took = time.monotonic() - began
        finally:
            other.kill()
    assert stuck.returncode == 1 and "exiting now" in stuck.stderr, stuck.stderr
    assert took < 30  # started, noticed within 0.05 s, ended 0.5 s later (seconds on a loaded machine)
