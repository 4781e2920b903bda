from __future__ import annotations

from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_relative_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    cfg_file = write(tmp_path / "sub" / "ctx.toml",
                     '[db]\npath = "store/x.sqlite"\n[connectors.filesystem.n]\nroot = "../docs"\n')
    cfg = config_mod.load_file(cfg_file)
    assert cfg.db.path == (tmp_path / "sub" / "store" / "x.sqlite").resolve()
    assert cfg.connectors.filesystem["n"].root == (tmp_path / "docs").resolve()


def test_unknown_key_names_file_key_and_fix(tmp_path: Path) -> None:
    cfg_file = write(tmp_path / "ctx.toml", '[connectors.filesystem.n]\nroot = "d"\nincude_globs = ["*.md"]\n')
    with pytest.raises(ConfigError) as err:
        config_mod.load_file(cfg_file)
    assert str(cfg_file) in err.value.message
    assert "connectors.filesystem.n.incude_globs" in err.value.message
    assert "unknown key" in err.value.message


def test_wrong_type_is_reported_with_key_path(tmp_path: Path) -> None:
    cfg_file = write(tmp_path / "ctx.toml", '[chunking]\nmax_tokens = "big"\n')
    with pytest.raises(ConfigError) as err:
        config_mod.load_file(cfg_file)
    assert "chunking.max_tokens" in err.value.message


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    cfg_file = write(tmp_path / "ctx.toml", "[db\npath=1")
    with pytest.raises(ConfigError, match="invalid TOML"):
        config_mod.load_file(cfg_file)


def test_env_expansion_with_default_and_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_TEST_DB", "from-env.sqlite")
    monkeypatch.delenv("CTX_TEST_MISSING", raising=False)
    cfg_file = write(tmp_path / "ctx.toml",
                     '[db]\npath = "${CTX_TEST_DB}"\n[server]\nauth_token = "${CTX_TEST_MISSING:-fallback}"\n')
    cfg = config_mod.load_file(cfg_file)
    assert cfg.db.path.name == "from-env.sqlite"
    assert cfg.server.auth_token == "fallback"
    write(cfg_file, '[db]\npath = "${CTX_TEST_MISSING}"\n')  # [server] auth_token: only HTTP is set aside
    with pytest.raises(ConfigError) as err:
        config_mod.load_file(cfg_file)
    assert "db.path" in err.value.message and "CTX_TEST_MISSING" in err.value.message


def test_discovery_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTX_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with pytest.raises(ConfigError, match="ctx init"):
        config_mod.discover(cwd=tmp_path)
    xdg = tmp_path / "xdg" / "context-harness" / "config.toml"
    xdg.parent.mkdir(parents=True)
    write(xdg, "")
    assert config_mod.discover(cwd=tmp_path) == xdg.resolve()
    plain = write(tmp_path / "ctx.toml", "")
    assert config_mod.discover(cwd=tmp_path) == plain.resolve()
    (tmp_path / ".ctx").mkdir()
    workspace = write(tmp_path / ".ctx" / "config.toml", "")
    assert config_mod.discover(cwd=tmp_path) == workspace.resolve()
    env_file = write(tmp_path / "env.toml", "")
    monkeypatch.setenv("CTX_CONFIG", str(env_file))
    assert config_mod.discover(cwd=tmp_path) == env_file.resolve()
    explicit = write(tmp_path / "explicit.toml", "")
    assert config_mod.discover(explicit, cwd=tmp_path) == explicit.resolve()
    with pytest.raises(ConfigError, match="does not exist"):
        config_mod.discover(tmp_path / "nope.toml")


def test_overlap_must_be_below_max_tokens(tmp_path: Path) -> None:
    cfg_file = write(tmp_path / "ctx.toml", "[chunking]\nmax_tokens = 64\noverlap_tokens = 64\n")
    with pytest.raises(ConfigError, match="chunking.overlap_tokens"):
        config_mod.load_file(cfg_file)


def test_for_root_keeps_workspace_in_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    (tmp_path / "notes").mkdir()
    cfg = config_mod.for_root(tmp_path / "notes")
    assert str(cfg.db.path).startswith(str(tmp_path / "data" / "context-harness"))
    assert cfg.connectors.filesystem["notes"].root == (tmp_path / "notes").resolve()
    assert config_mod.for_root(tmp_path / "notes").db.path == cfg.db.path
    with pytest.raises(ConfigError, match="not a folder"):
        config_mod.for_root(tmp_path / "missing")


def test_connector_tables_of_extension_types_are_kept_and_unknown_types_named() -> None:
    from context_harness.extensions import collect_extensions

    config = config_mod.from_dict({"connectors": {"changelog": {"notes": {"path": "CHANGELOG.md"}}}}, None)
    assert config.connectors.extension_tables() == {"changelog": {"notes": {"path": "CHANGELOG.md"}}}
    with pytest.raises(ConfigError, match=r"connectors.changelog: unknown connector type \(available: "
                                          r"filesystem, git, s3, script"):
        collect_extensions(discover=False).connector_kinds().build(config)
    with pytest.raises(ConfigError, match=r"connectors: changelog: expected tables \[connectors.changelog.NAME\]"):
        config_mod.from_dict({"connectors": {"changelog": 3}}, None)


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30.0), ("15m", 900.0), ("1h", 3600.0), ("1h30m", 5400.0), ("2d", 172800.0), ("1500ms", 1.5),
    (" 10 M ", 600.0), ("off", None), ("0", None),
])
def test_sync_interval_durations(text: str, seconds: float | None) -> None:
    cfg = config_mod.from_dict({"connectors": {"filesystem": {"n": {"root": ".", "sync_interval": text}}}}, None)
    assert cfg.connectors.filesystem["n"].sync_seconds == seconds


@pytest.mark.parametrize("text", ["10", "ten minutes", "5x", "-1m", "1m-", "500ms"])
def test_a_bad_sync_interval_names_the_key(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_mod.from_dict({"connectors": {"git": {"up": {"url": "u", "sync_interval": text}}}}, None)
    assert "connectors.git.up.sync_interval" in err.value.message
    assert '"15m"' in err.value.message or "at least 1s" in err.value.message


def test_sync_interval_defaults() -> None:
    cfg = config_mod.from_dict({"connectors": {
        "git": {"up": {"url": "u"}}, "filesystem": {"d": {"root": "."}},
        "script": {"s": {"path": "s.lua", "sync_interval": "15m", "page_size": 5}}}}, None)
    assert cfg.connectors.git["up"].sync_seconds == 600.0
    assert cfg.connectors.filesystem["d"].sync_seconds is None
    script = cfg.connectors.script["s"]
    assert script.sync_seconds == 900.0 and script.extra == {"page_size": 5}  # not passed to the script


@pytest.mark.parametrize(("toml", "said"), [
    ('[connectors.filesystem.notes]\nroot = "d"\nwriteable = true\n',
     "connectors.filesystem.notes.writeable: unknown key; did you mean writable?"),
    ('[retreival]\nfinal_limit = 3\n', "retreival: unknown key; did you mean retrieval?"),
    ('[retrieval]\nfinal_limt = 3\n', "retrieval.final_limt: unknown key; did you mean final_limit?"),
    ('[connectors.git.g]\nurl = "x"\nbranh = "main"\n', "connectors.git.g.branh: unknown key; did you mean branch?"),
    ('[registries.community]\nurll = "x"\n', "registries.community.urll: unknown key; did you mean url?"),
    ('[models.m]\nurl = "http://x"\nmodel = "m"\ntemprature = 1\n',
     "models.m.temprature: unknown key; did you mean temperature?"),
])
def test_a_misspelt_key_is_answered_with_the_closest_valid_one(tmp_path: Path, toml: str, said: str) -> None:
    cfg_file = write(tmp_path / "ctx.toml", toml)
    with pytest.raises(ConfigError) as err:
        config_mod.load_file(cfg_file)
    assert err.value.message.startswith(f"{cfg_file}: ")
    assert f"{said} (the config reference: `ctx help config`)" in err.value.message


def test_a_key_like_none_is_unknown_without_a_guess(tmp_path: Path) -> None:
    cfg_file = write(tmp_path / "ctx.toml", '[chunking]\nzebra = 1\n')
    with pytest.raises(ConfigError) as err:
        config_mod.load_file(cfg_file)
    assert err.value.message == (f"{cfg_file}: chunking.zebra: unknown key (check the spelling; the config "
                                 "reference: `ctx help config`)")


def test_a_misspelt_agent_key_is_answered_too(tmp_path: Path) -> None:
    from context_harness.agents.settings import load_settings

    cfg_file = write(tmp_path / "ctx.toml", '[agents.reviewer]\nsystem_promt = "x"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(config_mod.load_file(cfg_file))
    assert "agents.reviewer.system_promt: unknown key; did you mean system_prompt?" in err.value.message


def test_public_url_is_kept_without_its_trailing_slash(tmp_path: Path) -> None:
    cfg_file = write(tmp_path / "ctx.toml", '[server]\npublic_url = "https://kb.example.com/"\n')
    assert config_mod.load_file(cfg_file).server.public_url == "https://kb.example.com"


@pytest.mark.parametrize("url", ["kb.example.com", "ftp://kb.example.com", "https://kb.example.com/?a=1", "https://"])
def test_a_public_url_that_is_not_an_absolute_http_url_names_the_key(tmp_path: Path, url: str) -> None:
    cfg_file = write(tmp_path / "ctx.toml", f'[server]\npublic_url = "{url}"\n')
    with pytest.raises(ConfigError) as err:
        config_mod.load_file(cfg_file)
    assert "server.public_url" in err.value.message
    assert "absolute http(s) URL" in err.value.message
