"""The command an install hint names works where the user is: the running Python's pip for a checkout
(editable or not) or a wheel file, uv or pipx for a tool install, a git URL for a git install, and the
published name only for an install from an index. The wheel itself is checked by check.py."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from context_harness.config.install import InstallHint, install_hint
from support.paths import REPO

VENV = "/home/me/project/.venv"
UV = "/home/me/.local/share/uv/tools/context-harness"
PIPX = "/home/me/.local/share/pipx/venvs/context-harness"
PIP = f"{shlex.quote(sys.executable)} -m pip install"


def test_a_checkout_gets_the_running_pythons_pip_and_the_checkout(tmp_path: Path) -> None:
    editable = {"url": tmp_path.as_uri(), "dir_info": {"editable": True}}
    assert install_hint("documents", VENV, editable) == f"{PIP} -e '{tmp_path.as_posix()}[documents]'"
    assert install_hint("s3", VENV, {"url": tmp_path.as_uri(), "dir_info": {}}) == f"{PIP} '{tmp_path.as_posix()}[s3]'"
    assert install_hint("s3", UV, {"url": tmp_path.as_uri(), "dir_info": {}}) == \
        f"uv tool install --force '{tmp_path.as_posix()}[s3]'"
    assert install_hint("s3", PIPX, {"url": tmp_path.as_uri(), "dir_info": {}}) == \
        f"pipx install --force '{tmp_path.as_posix()}[s3]'"


def test_a_git_url_install_gets_the_same_url_and_a_wheel_its_file(tmp_path: Path) -> None:
    git = {"url": "https://git.example.com/team/context-harness.git",
           "vcs_info": {"vcs": "git", "commit_id": "0" * 40, "requested_revision": "v0.9"}}
    assert install_hint("postgres", UV, git) == \
        "uv tool install --force 'context-harness[postgres] @ git+https://git.example.com/team/context-harness.git@v0.9'"
    wheel = tmp_path / "context_harness-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert install_hint("documents", VENV, {"url": wheel.as_uri(), "archive_info": {}}) == \
        f"{PIP} '{wheel.as_posix()}[documents]'"


def test_only_an_index_install_gets_the_published_name(tmp_path: Path) -> None:
    assert install_hint("documents", VENV, {}) == f"{PIP} 'context-harness[documents]'"
    gone = {"url": (tmp_path / "deleted.whl").as_uri(), "archive_info": {}}  # the wheel file is gone
    assert install_hint("documents", PIPX, gone) == "pipx install --force 'context-harness[documents]'"


def test_this_checkouts_hint_names_it_and_is_worked_out_when_shown() -> None:
    hint = InstallHint("documents")
    assert hint._text is None  # importing a module that names a hint costs nothing
    shown = f"{hint}"
    assert shown == f"{PIP} -e '{REPO.as_posix()}[documents]'"  # the test environment: pip install -e '.[test]'
