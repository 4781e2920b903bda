"""A hostile or broken model endpoint (issue 55: JSON nesting and the low items of the chat client),
against the scripted OpenAI-compatible server on 127.0.0.1 (``support/chat_server.py``).

- tool-call arguments nested 100,000 deep are fed back to the model as a bad call naming the limit
  (the run goes on), never "internal error"; a whole reply nested that deep is a ``model_error``;
- ``tool_calls`` that is not a list of objects (a string, an object, a number, a list of strings) is
  a ``model_error`` naming what came, not an internal error (a string used to become one bogus call
  per character);
- an answer sent as content parts (``[{"type": "text", "text": ...}]``) is kept, its text parts joined;
- the API key echoed back JSON-escaped (``\\/``, ``\\u0073``) or base64-encoded, and the password of a
  ``user:pass@`` model URL (even one holding ``@``, or sent back as a ``Basic`` header), never reach
  an error; a model URL that is no URL is a ``model_error``, not an internal error."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_harness.agents.chat import OpenAIChat
from context_harness.common.redaction import REDACTOR
from context_harness.config import ModelConfig, from_dict
from context_harness.errors import ModelError
from support.agent_runs import run_workspace, steps_of
from support.chat_server import Reply, ScriptedChat, garbage, message, raw_arguments, status

KEY = "sk-live/Zq8r+Tn4w9Xv2Kp7Lm3"
PASSWORD = "hunter2@Secret-99"


@pytest.fixture(autouse=True)
def fresh_secrets() -> Iterator[None]:
    REDACTOR.forget_all()
    yield
    REDACTOR.forget_all()


def model(url: str, api_key: str | None = KEY) -> ModelConfig:
    """``[models.local]`` read from a config as ``ctx`` reads it (so its secrets are learnt)."""
    table: dict[str, Any] = {"url": url, "model": "local"}
    if api_key:
        table["api_key"] = api_key
    raw = {"db": {"path": "data/ctx.sqlite"}, "embedding": {"provider": "disabled"}, "models": {"local": table}}
    return from_dict(raw, None).models["local"]


def completion(said: dict[str, Any]) -> Reply:
    """200 with a chat completion whose message is ``said``, as given (malformed on purpose)."""
    return garbage(json.dumps({"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", **said}, "finish_reason": "stop"}]}).encode())


def ask(config: ModelConfig) -> Any:
    async def go() -> Any:
        return await OpenAIChat("local", config).complete([{"role": "user", "content": "hi"}], [], 10)
    return anyio.run(go)


def refused(reply: Reply, api_key: str | None = KEY) -> str:
    with ScriptedChat([reply], model="local") as chat:
        with pytest.raises(ModelError) as caught:
            ask(model(chat.url, api_key))
    return caught.value.message


# -- the reply's shape --------------------------------------------------------------------------------

@pytest.mark.parametrize(("calls", "what"), [
    ("search", "a string"), ({"function": {"name": "search"}}, "an object"), (7, "a number"),
    (["search", {"function": {"name": "search", "arguments": "{}"}}], "item 1 is a string"),
    ([None], "item 1 is null"),
])
def test_tool_calls_of_the_wrong_type_are_a_model_error(calls: Any, what: str) -> None:
    text = refused(completion({"content": None, "tool_calls": calls}))
    assert text.startswith("model 'local' (http://127.0.0.1:") and "answered tool_calls that is not a list of " \
        f"objects ({what})" in text, text


def test_an_answer_in_content_parts_is_kept() -> None:
    parts = [{"type": "text", "text": "Quokkas live "}, {"type": "image_url", "image_url": {"url": "x"}},
             {"type": "text", "text": "on Rottnest."}, "stray"]
    with ScriptedChat([completion({"content": parts})], model="local") as chat:
        reply = ask(model(chat.url))
    assert reply.content == "Quokkas live on Rottnest." and reply.tool_calls == []


def test_a_reply_nested_100000_deep_is_a_model_error() -> None:
    deep = b'{"choices": [{"message": {"role": "assistant", "content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}]}"
    text = refused(garbage(deep))
    assert "answered JSON nested more than 72 levels deep" in text, text


# -- secrets in errors ------------------------------------------------------------------------------

def echoes(key: str) -> list[str]:
    escaped = json.dumps(key)[1:-1].replace("/", "\\/")
    return [f"bad key {escaped}", "bad key " + "".join(f"\\u{ord(c):04X}" for c in key),
            "bad key " + base64.b64encode(key.encode()).decode(),
            "Authorization: Basic " + base64.b64encode(f"Bearer {key}".encode()).decode(),
            "bad key " + base64.urlsafe_b64encode(f"x{key}".encode()).decode()]


@pytest.mark.parametrize("echo", range(5))
def test_the_api_key_echoed_escaped_or_encoded_is_hidden(echo: int) -> None:
    body = echoes(KEY)[echo]
    for reply in (status(401, {"error": {"message": body}}), status(401, body)):
        text = refused(reply)
        assert "answered HTTP 401" in text and "***" in text, text
        for form in echoes(KEY):
            leaked = form.split(" ")[-1]
            assert leaked[4:-4] not in text, text  # the middle of every form (its ends may be shared bytes)


def test_the_password_of_a_model_url_never_reaches_an_error() -> None:
    basic = base64.b64encode(f"bob:{PASSWORD}".encode()).decode()
    with ScriptedChat([status(401, f"bad credentials: Basic {basic}")], model="local") as chat:
        url = chat.url.replace("http://", f"http://bob:{PASSWORD}@")
        with pytest.raises(ModelError) as caught:
            ask(model(url, api_key=None))
    text = caught.value.message
    assert "http://***@127.0.0.1:" in text and "Secret" not in text and basic[4:-4] not in text, text
    with pytest.raises(ModelError) as caught:  # nothing listens: the URL in "cannot reach"
        ask(model(f"http://bob:{PASSWORD}@127.0.0.1:9/v1", api_key=None))
    assert "Secret" not in caught.value.message and "http://***@127.0.0.1:9/v1" in caught.value.message
    with pytest.raises(ModelError) as caught:  # no URL at all: a model error naming the key, not internal
        ask(model(f"http://bob:{PASSWORD}@[::1:9/v1", api_key=None))
    assert "Secret" not in caught.value.message and caught.value.message.endswith("fix [models.local] url")


# -- in a run: what the model gets wrong is fed back, what the endpoint gets wrong is a fault ---------

def agent_run(root: Path, script: list[Reply]) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], ScriptedChat]:
    with ScriptedChat(script, model="local") as chat:
        run_workspace(root, chat.url)
        env = {**os.environ, "NO_COLOR": "1"}
        env.pop("CTX_CONFIG", None)
        done = subprocess.run([sys.executable, "-m", "context_harness", "agent", "run", "filer", "File it", "--json"],
                              cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(done.stdout), chat


def test_arguments_nested_100000_deep_are_fed_back_and_the_run_goes_on(tmp_path: Path) -> None:
    done, record, chat = agent_run(tmp_path, [raw_arguments("search", '{"query": ' + "[" * 100_000 + "]" * 100_000 + "}"),
                                              message("Sorry.")])
    assert done.returncode == 0 and record["status"] == "finished", done.stderr
    fed = chat.requests[1]["messages"][-1]
    assert fed["role"] == "tool"
    error = json.loads(fed["content"])["error"]
    assert error["code"] == "bad_request" and "nested more than 64 levels deep" in error["message"], error
    [tool] = steps_of(record, "tool")
    assert tool["outcome"] == "refused" and not steps_of(record, "fault")


def test_tool_calls_of_the_wrong_type_end_the_run_as_a_model_error(tmp_path: Path) -> None:
    done, record, _ = agent_run(tmp_path, [completion({"content": None, "tool_calls": 7})])
    assert done.returncode == 1 and record["status"] == "failed", done.stderr
    assert record["error"]["code"] == "model_error", record["error"]
    assert "answered tool_calls that is not a list of objects (a number)" in record["error"]["message"]


def test_every_form_of_a_secret_is_hidden_wherever_it_lies() -> None:
    from context_harness.common.redaction import redact
    REDACTOR.add([KEY])
    for prefix in ("", "x", "xy", "xyz"):  # each alignment inside a longer base64 text
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(f"{prefix}{KEY}tail".encode()).decode()
            assert KEY not in redact(encoded) and "***" in redact(encoded)
    escaped = "".join(f"\\u{ord(c):04x}" if i % 2 else c for i, c in enumerate(KEY))  # mixed forms
    for text in (escaped, escaped.replace("\\", "\\\\\\\\"), json.dumps(KEY).replace("/", "\\/")):
        assert redact(f"said {text} then") in ("said *** then", 'said "***" then'), redact(text)
    assert redact("https://bob:p@ss:w0rd@host/x and mail bob@example.com") == \
        "https://***@host/x and mail bob@example.com"
    assert redact("an ordinary sentence with no secret: abcd") == "an ordinary sentence with no secret: abcd"
