"""The scripted OpenAI-compatible chat server (``support/chat_server.py``) that the agent-run tests drive
a model with: each reply kind, asked over real HTTP on 127.0.0.1 with httpx, so the fake itself is
known good."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from support.chat_server import (
    HUGE_MIN,
    ScriptedChat,
    close,
    delay,
    garbage,
    huge,
    message,
    raw_arguments,
    status,
    tool_calls,
)

TOOLS = [{"type": "function", "function": {"name": "search", "description": "Search the knowledge base",
                                           "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                                                          "required": ["query"]}}}]


def ask(client: httpx.Client, chat: ScriptedChat, text: str = "find quokkas", **extra: object) -> httpx.Response:
    body = {"model": "local", "messages": [{"role": "system", "content": "You file notes."},
                                           {"role": "user", "content": text}], "tools": TOOLS, **extra}
    return client.post(f"{chat.url}/chat/completions", json=body, headers={"Authorization": "Bearer sk-test"})


@pytest.fixture
def client() -> httpx.Client:
    with httpx.Client(timeout=10) as http:
        yield http


def test_tool_calls_then_a_message_with_what_was_sent_kept(client: httpx.Client) -> None:
    with ScriptedChat([tool_calls([("search", {"query": "quokka"}), ("get", {"id": "abc"})]),
                       tool_calls([("search", {"query": "wombat"})], text="one more"),
                       message("Quokkas live on Rottnest.")]) as chat:
        assert chat.url.startswith("http://127.0.0.1:") and chat.url.endswith("/v1")
        first = ask(client, chat)
        assert first.status_code == 200 and first.headers["content-type"] == "application/json"
        answer = first.json()
        choice = answer["choices"][0]
        assert choice["finish_reason"] == "tool_calls" and answer["object"] == "chat.completion"
        assert answer["model"] == "local"
        said = choice["message"]
        assert said["role"] == "assistant" and said["content"] is None
        assert said["tool_calls"] == [
            {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"query": "quokka"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get", "arguments": '{"id": "abc"}'}}]
        sent = first.request.content
        assert answer["usage"]["prompt_tokens"] == len(sent) // 4 > 0
        assert answer["usage"]["total_tokens"] == answer["usage"]["prompt_tokens"] + answer["usage"]["completion_tokens"]

        second = ask(client, chat, "the tool said 3 hits").json()["choices"][0]["message"]
        assert second["content"] == "one more"
        assert [c["id"] for c in second["tool_calls"]] == ["call_3"]  # ids run on over the server's life

        final = ask(client, chat, "done?").json()
        assert final["choices"][0] == {"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": "Quokkas live on Rottnest."}}
        assert chat.replies_left == 0
        assert [r["messages"][-1]["content"] for r in chat.requests] == ["find quokkas", "the tool said 3 hits",
                                                                        "done?"]
        assert chat.requests[0]["messages"][0] == {"role": "system", "content": "You file notes."}
        assert chat.requests[0]["tools"] == TOOLS
        assert [h["authorization"] for h in chat.headers] == ["Bearer sk-test"] * 3


def test_a_message_with_the_usage_and_finish_reason_a_test_sets(client: httpx.Client) -> None:
    usage = {"prompt_tokens": 90_000, "completion_tokens": 10, "total_tokens": 90_010}
    with ScriptedChat([message("cut", finish_reason="length", usage=usage)]) as chat:
        answer = ask(client, chat).json()
    assert answer["usage"] == usage and answer["choices"][0]["finish_reason"] == "length"


def test_malformed_arguments_are_sent_as_written(client: httpx.Client) -> None:
    with ScriptedChat([raw_arguments("search", "{not json")]) as chat:
        call = ask(client, chat).json()["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "search", "arguments": "{not json"}
    with pytest.raises(json.JSONDecodeError):
        json.loads(call["function"]["arguments"])


def test_statuses_garbage_and_an_exhausted_script(client: httpx.Client) -> None:
    with ScriptedChat([status(500, "upstream exploded"), status(429, {"error": {"message": "slow down"}}),
                       garbage(), garbage(b"\xff\xfe not even text")]) as chat:
        failed = ask(client, chat)
        assert (failed.status_code, failed.text) == (500, "upstream exploded")
        limited = ask(client, chat)
        assert limited.status_code == 429 and limited.json() == {"error": {"message": "slow down"}}
        page = ask(client, chat)
        assert page.status_code == 200 and page.text.startswith("<html>")
        with pytest.raises(json.JSONDecodeError):
            page.json()
        assert ask(client, chat).content == b"\xff\xfe not even text"
        for _ in range(2):
            exhausted = ask(client, chat)
            assert exhausted.status_code == 500 and "script exhausted" in exhausted.json()["error"]["message"]
        assert len(chat.requests) == 6


def test_streaming_is_refused_without_using_a_reply(client: httpx.Client) -> None:
    with ScriptedChat([message("hello")]) as chat:
        refused = ask(client, chat, stream=True)
        assert refused.status_code == 400 and "stream" in refused.json()["error"]["message"]
        assert ask(client, chat).json()["choices"][0]["message"]["content"] == "hello"
        assert [r.get("stream") for r in chat.requests] == [True, None]


def test_models_unknown_paths_and_bodies_that_are_not_json(client: httpx.Client) -> None:
    with ScriptedChat([message("unused")], model="qwen2.5:7b") as chat:
        models = client.get(f"{chat.url}/models")
        assert models.status_code == 200 and [m["id"] for m in models.json()["data"]] == ["qwen2.5:7b"]
        assert client.get(f"{chat.url}/nothing").status_code == 404
        assert client.post(f"{chat.url}/completions", json={}).status_code == 404
        bad = client.post(f"{chat.url}/chat/completions", content=b"{oops", headers={"content-type": "application/json"})
        assert bad.status_code == 400 and "not JSON" in bad.json()["error"]["message"]
        assert chat.requests == [] and chat.replies_left == 1


def test_a_delayed_reply_times_a_client_out_and_a_stop_cuts_it_short(client: httpx.Client) -> None:
    with ScriptedChat([delay(0.3, then=message("late")), delay(30, then=message("never"))]) as chat:
        started = time.monotonic()
        assert ask(client, chat).json()["choices"][0]["message"]["content"] == "late"
        assert time.monotonic() - started >= 0.3
        with httpx.Client(timeout=0.5) as impatient, pytest.raises(httpx.ReadTimeout):
            ask(impatient, chat)
        started = time.monotonic()
    assert time.monotonic() - started < 5  # the 30 s delay did not hold the server's stop


def test_a_dropped_connection(client: httpx.Client) -> None:
    with ScriptedChat([close(), message("after")]) as chat:
        with pytest.raises(httpx.RemoteProtocolError):
            ask(client, chat)
        assert ask(client, chat).json()["choices"][0]["message"]["content"] == "after"


@pytest.mark.parametrize("chunked", [False, True])
def test_a_huge_answer_has_exactly_its_size_and_is_a_completion(client: httpx.Client, chunked: bool) -> None:
    size = 10 * 1024 * 1024 + 7
    with ScriptedChat([huge(size, chunked=chunked)]) as chat:
        answer = ask(client, chat)
    assert answer.status_code == 200 and len(answer.content) == size
    assert ("content-length" in answer.headers) is not chunked
    said = answer.json()["choices"][0]["message"]["content"]
    assert set(said) == {"x"} and len(said) > size - 1000
    assert answer.json()["usage"]["completion_tokens"] == size // 4


def test_a_client_that_stops_reading_a_huge_answer_leaves_the_server_serving(client: httpx.Client) -> None:
    with ScriptedChat([huge(200 * 1024 * 1024), message("still here")]) as chat:
        body = {"model": "local", "messages": [{"role": "user", "content": "hi"}]}
        read = 0
        started = time.monotonic()
        with client.stream("POST", f"{chat.url}/chat/completions", json=body) as streamed:
            for piece in streamed.iter_bytes():
                read += len(piece)
                if read > 1024 * 1024:
                    break  # a capped reader: closes the connection mid-answer
        assert time.monotonic() - started < 10 and read < 200 * 1024 * 1024
        assert ask(client, chat).json()["choices"][0]["message"]["content"] == "still here"
    with pytest.raises(ValueError, match="at least"):
        huge(HUGE_MIN - 1)


def test_the_server_is_gone_after_the_block(client: httpx.Client) -> None:
    with ScriptedChat([]) as chat:
        url = chat.url
        assert ask(client, chat).status_code == 500
    with pytest.raises(httpx.ConnectError):
        client.get(f"{url}/models")
