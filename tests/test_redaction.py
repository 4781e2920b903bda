"""What counts as a secret, and that errors and log records come out without them."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from context_harness.common import redaction
from context_harness.common.redaction import REDACTOR, redact, remember
from context_harness.config import from_dict
from context_harness.errors import ConfigError, ToolError


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    REDACTOR.forget_all()
    yield
    REDACTOR.forget_all()


def test_learns_expanded_values_secret_keys_url_credentials_and_env_allow(tmp_path) -> None:
    env = {"API": "sk-expanded-1", "NAME": "team-notes", "DOCS": str(tmp_path), "ALLOWED": "allowed-value-2",
           "SHORT": "ab"}
    raw = {"embedding": {"api_key": "${API}"}, "server": {"auth_token": "literal-token-3"},
           "connectors": {"git": {"w": {"url": "https://bob:url-pass-4@host/x.git", "root": "${NAME}"},
                                  "v": {"url": "https://deploy-key-5@host/y.git"}},
                          "filesystem": {"d": {"root": "${DOCS}"}}, "script": {"s": {"label": "${NAME}-x${SHORT}"}}},
           "lua": {"env_allow": ["ALLOWED", "MISSING"]}}
    expanded = {"embedding": {"api_key": "sk-expanded-1"}, "server": {"auth_token": "literal-token-3"},
                "connectors": {"git": {"w": {"url": "https://bob:url-pass-4@host/x.git", "root": "team-notes"},
                                       "v": {"url": "https://deploy-key-5@host/y.git"}},
                               "filesystem": {"d": {"root": str(tmp_path)}}, "script": {"s": {"label": "team-notes-xab"}}},
                "lua": {"env_allow": ["ALLOWED", "MISSING"]}}
    remember(raw, expanded, env)
    text = ("sk-expanded-1 literal-token-3 url-pass-4 deploy-key-5 allowed-value-2 team-notes "
            f"{tmp_path} ab")
    # a path key's value and a path are not secrets; a value used elsewhere is; too short ones are not
    assert redact(text) == f"*** *** *** *** *** *** {tmp_path} ab"


def test_url_credentials_are_hidden_whoever_wrote_them() -> None:
    assert redact("fatal: unable to access 'https://u:p@example.com/r.git/'") == (
        "fatal: unable to access 'https://***@example.com/r.git/'")
    assert redact("see git@github.com:o/r.git and mailto:a@b.c") == "see git@github.com:o/r.git and mailto:a@b.c"


def test_errors_and_log_records_are_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    remember({"k": {"api_key": "x"}}, {"k": {"api_key": "sk-scrub-me-6"}}, {})
    assert ToolError("failed with sk-scrub-me-6").message == "failed with ***"
    assert ToolError("failed with sk-scrub-me-6").to_dict()["error"]["message"] == "failed with ***"
    with caplog.at_level(logging.INFO):
        logging.getLogger("context_harness.test").info("key %s in %r", "sk-scrub-me-6", {"k": "sk-scrub-me-6"})
        try:
            raise RuntimeError("boom sk-scrub-me-6")
        except RuntimeError:
            logging.getLogger("context_harness.test").exception("failed")
    text = caplog.text
    assert "sk-scrub-me-6" not in text
    assert "key *** in {'k': '***'}" in text and "RuntimeError: boom ***" in text


def test_an_invalid_config_does_not_echo_an_expanded_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTX_TEST_BAD_VALUE", "bad-config-secret-7")
    with pytest.raises(ConfigError) as caught:
        from_dict({"server": {"max_body_bytes": "${CTX_TEST_BAD_VALUE}"}}, None)
    assert "max_body_bytes" in caught.value.message
    assert "bad-config-secret-7" not in caught.value.message


def test_scrub_leaves_malformed_records_to_logging() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%s %s", ("one",), None)
    assert redaction.scrub(record) is record


def test_a_database_urls_lone_user_is_a_role_not_a_secret() -> None:
    urls = {"db": {"url": "postgresql://postgres@127.0.0.1:5432/ctx",
                   "read_url": "postgres://replicator:standby-pass-6@10.0.0.2/ctx"},
            "connectors": {"git": {"v": {"url": "https://deploy-key-5@host/y.git"}}}}
    remember(urls, urls, {})
    assert redact("this workspace is on postgres already; replicator standby-pass-6 deploy-key-5") == (
        "this workspace is on postgres already; replicator *** ***")
