"""``[server.oauth]``: enabling it without what it needs is a config error naming the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.errors import ConfigError


def load(tmp_path: Path, server: str) -> config_mod.Config:
    path = tmp_path / "ctx.toml"
    path.write_text(server, encoding="utf-8")
    return config_mod.load_file(path)


def test_oauth_is_off_by_default_with_sane_lifetimes(tmp_path: Path) -> None:
    oauth = load(tmp_path, "").server.oauth
    assert not oauth.enabled
    assert oauth.access_token_lifetime == 3600
    assert oauth.refresh_token_lifetime == 30 * 86_400


@pytest.mark.parametrize(("server", "fix"), [
    ('auth_token = "t"', "needs [server] public_url"),
    ('auth_token = "t"\npublic_url = "http://kb.example.com"', "needs an https [server] public_url"),
    ('auth_token = "t"\npublic_url = "https://kb.example.com/kb"', "without a path"),
    ('public_url = "https://kb.example.com"', "needs [server] auth_token"),
])
def test_enabling_oauth_without_what_it_needs_names_the_fix(tmp_path: Path, server: str, fix: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, f"[server]\n{server}\n[server.oauth]\nenabled = true\n")
    assert "[server.oauth] enabled = true" in err.value.message
    assert fix in err.value.message


def test_loopback_http_is_allowed_for_testing(tmp_path: Path) -> None:
    cfg = load(tmp_path, '[server]\nauth_token = "t"\npublic_url = "http://127.0.0.1:7331"\n'
                         "[server.oauth]\nenabled = true\naccess_token_lifetime = 120\n")
    assert cfg.server.oauth.enabled and cfg.server.oauth.access_token_lifetime == 120
