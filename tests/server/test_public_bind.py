"""HTTP on a non-loopback address needs a token, unless the user opts out explicitly.

No test here listens anywhere but loopback: the refused address is 192.0.2.1 (TEST-NET-1, assigned to
no machine), so even a broken guard could not serve on it.
"""

from __future__ import annotations

import logging

import pytest

from context_harness import config as config_mod
from context_harness.errors import ConfigError
from context_harness.server.http import check_bind, is_loopback
from support.cli import run_ctx
from support.workspace import config_toml, write_files


def config(tmp_path, server: str):
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "ctx.toml").write_text(config_toml(server=server), encoding="utf-8")
    return config_mod.load_file(tmp_path / "ctx.toml")


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("localhost", True), ("LOCALHOST", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.5", False), ("10.0.0.1", False), ("example.org", False),
])
def test_what_counts_as_loopback(host, loopback) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "my-laptop.local"])
@pytest.mark.parametrize("token", [None, ""])
def test_a_public_address_without_a_token_is_refused(tmp_path, host, token) -> None:
    server = "sync_on_start = false" + ("" if token is None else f'\nauth_token = "{token}"')
    with pytest.raises(ConfigError) as info:
        check_bind(config(tmp_path, server), host)
    message = info.value.message
    assert "\n" not in message and host in message
    assert "[server] auth_token" in message and "allow_unauthenticated = true" in message


def test_a_token_or_loopback_serves_quietly(tmp_path, caplog) -> None:
    caplog.set_level(logging.WARNING)
    check_bind(config(tmp_path, 'auth_token = "s3cret"'), "0.0.0.0")
    check_bind(config(tmp_path, "sync_on_start = false"), "127.0.0.1")
    assert caplog.records == []


def test_opting_out_serves_and_says_so_loudly(tmp_path, caplog) -> None:
    caplog.set_level(logging.WARNING)
    check_bind(config(tmp_path, "allow_unauthenticated = true"), "0.0.0.0")
    [record] = caplog.records
    assert "WITHOUT AUTHENTICATION" in record.getMessage() and "0.0.0.0" in record.getMessage()


def test_ctx_serve_refuses_with_one_line(tmp_path) -> None:
    write_files(tmp_path / "docs", {"a.md": "# A\n\ntext\n"})
    (tmp_path / "ctx.toml").write_text(config_toml(server="sync_on_start = false"), encoding="utf-8")
    done = run_ctx("serve", "--http", "--bind", "192.0.2.1:7391", cwd=tmp_path, timeout=60)
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if "refusing to serve on 192.0.2.1" in line]
    assert len(errors) == 1 and "auth_token" in errors[0]
    assert "Traceback" not in done.stderr and "serving MCP" not in done.stderr
