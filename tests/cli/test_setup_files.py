"""``ctx setup`` and a client file it should not trust (issue 55): it writes through a temporary file of
its own making (a random name, created exclusively beside the file, then renamed over it), so a link
planted where a fixed temporary name would be, or where the backup goes, is never written through; it
keeps the file's mode and refuses a read-only file; and a file holding what JSON cannot hold (``NaN``,
``Infinity``, ``1e400``, an integer of 5,000 digits, a lone surrogate) or nested deeper than it reads
is refused with an error naming the file, never rewritten into invalid JSON, never a traceback. The
real ``ctx`` in process (``CliRunner``), in a temporary home."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from context_harness.cli import cli

Run = Callable[..., Result]


@pytest.fixture
def run(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")

    def invoke(*args: str) -> Result:
        env: dict[str, str | None] = {"HOME": str(home), "XDG_CONFIG_HOME": None, "APPDATA": None,
                                      "CLAUDE_CONFIG_DIR": None, "CTX_CONFIG": None, "CTX_SETUP_PLATFORM": "linux"}
        return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return invoke


def cursor_file(home: Path, text: str = '{"mcpServers": {"other": {"command": "y"}}}') -> Path:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_link_planted_at_the_old_temporary_name_is_not_written_through(run: Run, home: Path, kb: Path,
                                                                         tmp_path: Path) -> None:
    path = cursor_file(home)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n", encoding="utf-8")
    (path.parent / ".mcp.json.ctx-setup.tmp").symlink_to(victim)  # the name setup used every time
    result = run("setup", "cursor", "--config", str(kb))
    assert result.exit_code == 0, result.output
    assert victim.read_text(encoding="utf-8") == "the user's own file\n"
    assert "context-harness" in json.loads(path.read_text(encoding="utf-8"))["mcpServers"]
    assert not path.is_symlink()
    left = sorted(p.name for p in path.parent.iterdir())
    assert [n for n in left if n.endswith(".tmp") and n != ".mcp.json.ctx-setup.tmp"] == []  # its own is gone


def test_a_dangling_link_where_the_backup_goes_is_not_written_through(run: Run, home: Path, kb: Path,
                                                                      tmp_path: Path) -> None:
    path = cursor_file(home)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    later = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() + 1))
    outside = [tmp_path / "planted-1", tmp_path / "planted-2"]
    for name, target in zip((stamp, later), outside, strict=True):
        (path.parent / f"mcp.json.bak-{name}").symlink_to(target)  # dangling: exists() is False
    result = run("setup", "cursor", "--config", str(kb))
    assert result.exit_code == 0, result.output
    assert not any(p.exists() for p in outside)
    backup = Path(result.stdout.split("backup of the previous file: ", 1)[1].splitlines()[0])
    assert not backup.is_symlink()
    assert json.loads(backup.read_text(encoding="utf-8")) == {"mcpServers": {"other": {"command": "y"}}}


def test_the_files_mode_is_kept(run: Run, home: Path, kb: Path) -> None:
    path = cursor_file(home)
    path.chmod(0o600)
    assert run("setup", "cursor", "--config", str(kb)).exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o640)
    assert run("setup", "cursor", "--name", "second", "--config", str(kb)).exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_read_only_file_is_refused_and_left_as_it_is(run: Run, home: Path, kb: Path) -> None:
    path = cursor_file(home)
    path.chmod(0o444)
    before = path.read_bytes()
    result = run("setup", "cursor", "--config", str(kb))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {path} is read-only (mode 0444): `ctx setup` changed nothing"), (
        result.stderr)
    assert "chmod u+w" in result.stderr and "--print" in result.stderr
    assert path.read_bytes() == before and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert sorted(p.name for p in path.parent.iterdir()) == ["mcp.json"]  # no backup, no temporary file


@pytest.mark.parametrize("text, problem", [
    ('{"mcpServers": {}, "limit": NaN}', "holds NaN, which is not JSON"),
    ('{"mcpServers": {}, "limit": Infinity}', "holds Infinity, which is not JSON"),
    ('{"mcpServers": {}, "limit": -Infinity}', "holds -Infinity, which is not JSON"),
    ('{"mcpServers": {}, "limit": 1e400}', "holds the number 1e400, which is too large to keep"),
    ('{"mcpServers": {}, "limit": ' + "9" * 5000 + "}", "holds a number of 5000 digits, which is too large"),
    ('{"mcpServers": {}, "name": "\\ud800"}', "holds a lone surrogate (\\ud800)"),
    ('{"mcpServers": {}, "deep": ' + "[" * 990 + "]" * 990 + "}", "is nested more than 256 levels deep"),
    ('{"mcpServers": {}, "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", "is nested more than 256 levels deep"),
])
def test_a_file_json_cannot_hold_is_refused_not_rewritten(run: Run, home: Path, kb: Path, text: str,
                                                          problem: str) -> None:
    path = cursor_file(home, text)
    result = run("setup", "cursor", "--config", str(kb))
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: {path} {problem}"), result.stderr[:300]
    assert "`ctx setup` changed nothing" in result.stderr
    assert path.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in path.parent.iterdir()) == ["mcp.json"]


def test_a_deep_file_is_a_clear_error_for_doctor_too(run: Run, home: Path) -> None:
    path = cursor_file(home, '{"mcpServers": ' + "[" * 990 + "]" * 990 + "}")
    result = run("doctor", "cursor")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {path} is nested more than 256 levels deep"), result.stderr[:300]
    assert os.path.exists(path)
