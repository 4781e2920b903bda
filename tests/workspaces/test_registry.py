"""The workspace registry (``ctx workspace add/list/remove``, ``config/workspaces.py``): real files,
the real command line in process (click's runner), and ``ctx doctor``'s report of bad entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_harness.cli import cli
from context_harness.config import workspaces
from support.workspace import config_toml, write_files


def make_config(folder: Path, text: str | None = None) -> Path:
    write_files(folder / "docs", {"a.md": "# A\n\nalpha\n"})
    path = folder / "ctx.toml"
    path.write_text(text if text is not None else config_toml(), encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_add_list_remove_keep_a_toml_file(tmp_path: Path) -> None:
    file = tmp_path / "reg" / "workspaces.toml"
    one, two = make_config(tmp_path / "one"), make_config(tmp_path / "two")
    assert run("workspace", "add", "one", str(one), "--file", str(file))[0] == 0
    assert run("workspace", "add", "two", str(two), "--file", str(file))[0] == 0
    assert [e.name for e in workspaces.read(file)] == ["one", "two"]
    code, out, _ = run("workspace", "list", "--file", str(file), "--json")
    assert code == 0
    rows = json.loads(out)["workspaces"]
    assert [(r["name"], r["config"], r["ok"]) for r in rows] == [("one", str(one), True), ("two", str(two), True)]
    assert run("workspace", "remove", "one", "--file", str(file))[0] == 0
    assert [e.name for e in workspaces.read(file)] == ["two"]
    code, _, err = run("workspace", "remove", "one", "--file", str(file))
    assert code == 1 and "no workspace named 'one'" in err and "registered: two" in err


def test_add_refuses_a_taken_name_a_second_name_for_one_config_and_a_missing_file(tmp_path: Path) -> None:
    file = tmp_path / "workspaces.toml"
    one = make_config(tmp_path / "one")
    assert run("workspace", "add", "one", str(one), "--file", str(file))[0] == 0
    code, _, err = run("workspace", "add", "one", str(make_config(tmp_path / "x")), "--file", str(file))
    assert code == 1 and "already registered" in err
    code, _, err = run("workspace", "add", "again", str(one), "--file", str(file))
    assert code == 1 and "already registered as workspace 'one'" in err
    code, _, err = run("workspace", "add", "gone", str(tmp_path / "nope.toml"), "--file", str(file))
    assert code == 1 and "does not exist" in err
    code, _, err = run("workspace", "add", "Bad Name", str(one), "--file", str(file))
    assert code == 1 and "lowercase" in err


def test_bad_entries_are_listed_as_set_aside_with_why(tmp_path: Path) -> None:
    good = make_config(tmp_path / "good")
    broken = make_config(tmp_path / "broken", "[db]\npath = 3\n")
    file = tmp_path / "workspaces.toml"
    file.write_text(f'[workspaces.good]\nconfig = "{good}"\n\n[workspaces.twin]\nconfig = "{good}"\n\n'
                    f'[workspaces.broken]\nconfig = "{broken}"\n\n[workspaces.gone]\nconfig = "gone/ctx.toml"\n',
                    encoding="utf-8")
    checked = workspaces.check(file)
    assert [e.name for e, _ in checked.good] == ["good"]
    why = {e.name: problem for e, problem in checked.bad}
    assert "two names for one config" in why["twin"] and "'good'" in why["twin"]
    assert str(broken) in why["broken"] and "db.path" in why["broken"]
    assert why["gone"] == f"config file {tmp_path / 'gone' / 'ctx.toml'} does not exist"
    code, out, _ = run("workspace", "list", "--file", str(file))
    assert code == 1
    lines = {line.split()[0]: line.split(None, 2)[2] for line in out.splitlines()}
    assert lines["good"] == "ok" and lines["gone"].startswith("SET ASIDE: config file")


def test_the_default_file_is_in_the_user_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    one = make_config(tmp_path / "one")
    assert run("workspace", "add", "one", str(one))[0] == 0
    assert workspaces.default_file() == tmp_path / "cfg" / "context-harness" / "workspaces.toml"
    assert [e.name for e in workspaces.read(workspaces.default_file())] == ["one"]


def test_doctor_reports_the_entries_set_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from context_harness.cli.workspaces import doctor_lines

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert doctor_lines() == ([], [])  # no registry: nothing said
    good = make_config(tmp_path / "good")
    assert run("workspace", "add", "good", str(good))[0] == 0
    assert run("workspace", "add", "later", str(make_config(tmp_path / "later")))[0] == 0
    (tmp_path / "later" / "ctx.toml").unlink()
    served, set_aside = doctor_lines()
    assert served == [f"workspaces {workspaces.default_file()}: 1 serve (good)"]
    assert set_aside == [f"workspace later is set aside: config file {tmp_path / 'later' / 'ctx.toml'} does not exist"]


def test_doctor_warns_of_the_set_aside_workspaces_of_a_client_entry(tmp_path: Path) -> None:
    from context_harness.cli.workspaces import entry_registry_warnings

    file = tmp_path / "workspaces.toml"
    file.write_text(f'[workspaces.gone]\nconfig = "{tmp_path / "gone.toml"}"\n', encoding="utf-8")
    entry = {"command": "context-harness", "args": ["--workspaces", str(file)]}
    assert entry_registry_warnings(entry) == [f"workspace gone is set aside: config file {tmp_path / 'gone.toml'} "
                                              "does not exist"]
    assert entry_registry_warnings({"command": "context-harness", "args": ["--config", "x.toml"]}) == []
    assert entry_registry_warnings({"command": "context-harness", "args": ["--workspaces"]}) == []  # said once, after
    missing = {"command": "context-harness", "args": ["--workspaces", str(tmp_path / "none.toml")]}
    assert entry_registry_warnings(missing) == [f"the registry {tmp_path / 'none.toml'} does not exist"]
