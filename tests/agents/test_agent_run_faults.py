"""What goes wrong in ``ctx agent run``, one test each, against the scripted chat server: an endpoint that is
down, slow (its ``timeout``, or the run's ``max_seconds``), answers a malformed tool call, calls an unknown
tool, loops on one call, answers 10 MB, an HTML page, HTTP 500 or JSON that is not a chat reply, or drops
the connection; a tool that fails; and the budgets (``max_steps``, ``max_seconds``, ``max_run_tokens``).

The real CLI in a subprocess: what the model gets wrong is fed back and the run goes on (exit 0); what
the endpoint gets wrong ends the run with a ``fault`` step (exit 1); a budget ends it as ``budget``
(exit 1). Never a traceback, always within a bound (5x headroom over what the run is allowed)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from context_harness.common.text import estimate_tokens
from support.agent_runs import PERMIT_ID, run_workspace, steps_of
from support.chat_server import (
    Reply,
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

TASK = "File the meeting notes"


def run(root: Path, script: list[Reply], *args: str, model_keys: str = "",
        url: str | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], float, ScriptedChat]:
    """``ctx agent run filer TASK --json *args`` against ``script``; the process, its record, the
    seconds it took and the server (its ``requests``)."""
    with ScriptedChat(script, model="local") as chat:
        run_workspace(root, url or chat.url, model_keys=model_keys)
        env = {**os.environ, "NO_COLOR": "1"}
        env.pop("CTX_CONFIG", None)
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "context_harness", "agent", "run", "filer", TASK, "--json", *args],
                              cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        took = time.monotonic() - began
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("{"), done.stderr
    return done, json.loads(done.stdout), took, chat


def fault_of(done: subprocess.CompletedProcess[str], record: dict[str, Any]) -> str:
    """The run failed on its endpoint: exit 1, a fault step, the reason on stderr; the fault's text."""
    assert done.returncode == 1, done.stderr
    assert record["status"] == "failed" and record["error"]["code"] == "model_error"
    [fault] = steps_of(record, "fault")
    assert record["reason"] == fault["text"] == record["error"]["message"]
    assert f"run {record['id']} failed: {fault['text']}" in done.stderr
    assert record["steps"][-1]["kind"] == "end"
    return str(fault["text"])


def fed_back(chat: ScriptedChat, n: int) -> str:
    """What the ``n``-th request (0-based) fed back for the call before it."""
    last = chat.requests[n]["messages"][-1]
    assert last["role"] == "tool"
    return str(last["content"])


# -- the endpoint -----------------------------------------------------------------------------------

def test_endpoint_down(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done, record, took, _ = run(tmp_path, [], url=f"http://127.0.0.1:{port}/v1")
    text = fault_of(done, record)
    assert text == (f"model 'local': cannot reach http://127.0.0.1:{port}/v1/chat/completions (connection refused); "
                    "is the server running? ([models.local] url)")
    assert took < 30


def test_slow_beyond_the_model_timeout(tmp_path: Path) -> None:
    done, record, took, _ = run(tmp_path, [delay(30, message("late"))], model_keys="timeout = 1")
    text = fault_of(done, record)
    assert text.startswith("model 'local' (") and "did not answer within 1 s ([models.local] timeout" in text
    assert record["seconds"] < 5, "1 s allowed"
    assert took < 30


def test_slow_beyond_the_runs_max_seconds(tmp_path: Path) -> None:
    done, record, took, _ = run(tmp_path, [delay(30, message("late"))], "--max-seconds", "1")
    assert done.returncode == 1
    assert record["status"] == "budget" and record["reason"].startswith("max_seconds (1 s) reached")
    [fault] = steps_of(record, "fault")
    assert "did not answer within 1 s" in fault["text"]
    assert record["seconds"] < 5, "1 s allowed"
    assert took < 30


def test_malformed_tool_call_is_fed_back_and_the_run_goes_on(tmp_path: Path) -> None:
    done, record, _, chat = run(tmp_path, [raw_arguments("search", '{"query": "shed'), message("Sorry, fixed.")])
    assert done.returncode == 0 and record["status"] == "finished", done.stderr
    error = json.loads(fed_back(chat, 1))["error"]
    assert error["code"] == "bad_request"
    assert error["message"].startswith("the arguments are not JSON (Unterminated string starting at: character 10")
    assert error["message"].endswith("send a JSON object")
    [tool] = steps_of(record, "tool")
    assert tool["outcome"] == "refused" and not steps_of(record, "fault")


def test_arguments_that_are_not_an_object_are_fed_back(tmp_path: Path) -> None:
    done, record, _, chat = run(tmp_path, [raw_arguments("search", '["shed"]'), message("Ok.")])
    assert done.returncode == 0 and record["status"] == "finished", done.stderr
    assert json.loads(fed_back(chat, 1))["error"]["message"] == "the arguments must be a JSON object"


def test_unknown_tool_is_fed_back_with_the_list(tmp_path: Path) -> None:
    done, record, _, chat = run(tmp_path, [tool_calls([("delete_everything", {"really": True})]), message("Ok.")])
    assert done.returncode == 0 and record["status"] == "finished", done.stderr
    error = json.loads(fed_back(chat, 1))["error"]
    assert error == {"code": "bad_request",
                     "message": "unknown tool 'delete_everything': this agent's tools are search, get, note_write"}
    assert not (tmp_path / "notes" / "projects").exists()


def test_a_tools_error_is_fed_back(tmp_path: Path) -> None:
    script = [tool_calls([("get", {"id": "0" * 24})]), tool_calls([("get", {"id": PERMIT_ID, "chunk": 0,
                                                                          "offset": 3})]), message("Ok.")]
    done, record, _, chat = run(tmp_path, script)
    assert done.returncode == 0 and record["status"] == "finished", done.stderr
    missing = json.loads(fed_back(chat, 1))["error"]
    assert missing["code"] == "not_found" and "use an id returned by search" in missing["message"]
    invalid = json.loads(fed_back(chat, 2))["error"]
    assert invalid["code"] == "bad_request"
    assert [s["outcome"] for s in steps_of(record, "tool")] == ["error", "error"]


def test_a_loop_ends_the_run(tmp_path: Path) -> None:
    call = tool_calls([("search", {"query": "shed"})])
    done, record, _, chat = run(tmp_path, [call, call, call, message("never asked")])
    assert done.returncode == 1
    assert record["status"] == "failed"
    assert record["reason"] == "the model called search with the same arguments 3 times in a row; the run stopped"
    assert len(chat.requests) == 3 and chat.replies_left == 1
    assert [s["outcome"] for s in steps_of(record, "tool")] == ["ok", "ok", "refused"]
    assert "the run stopped" in done.stderr


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_ten_megabytes_end_the_run(tmp_path: Path, chunked: bool) -> None:
    done, record, took, _ = run(tmp_path, [huge(10_000_000, chunked=chunked)])
    text = fault_of(done, record)
    assert text.endswith("answered more than 4,000,000 bytes ([models.local] max_response_bytes); the reply was not read")
    assert took < 30


def test_an_html_page(tmp_path: Path) -> None:
    done, record, _, _ = run(tmp_path, [garbage()])
    text = fault_of(done, record)
    assert text.endswith("answered something that is not JSON: '<html><body>502 Bad Gateway</body></html>'")


def test_http_500(tmp_path: Path) -> None:
    done, record, _, _ = run(tmp_path, [status(500, "upstream exploded")])
    assert fault_of(done, record).endswith("answered HTTP 500: 'upstream exploded'")


def test_json_that_is_not_a_chat_reply(tmp_path: Path) -> None:
    done, record, _, _ = run(tmp_path, [status(200, {"object": "list", "data": []})])
    assert "answered JSON without choices[0].message" in fault_of(done, record)


def test_a_dropped_connection(tmp_path: Path) -> None:
    done, record, took, _ = run(tmp_path, [close()])
    text = fault_of(done, record)
    assert text.startswith("model 'local': cannot reach ") and "([models.local] url)" in text
    assert took < 30


# -- budgets ----------------------------------------------------------------------------------------

def test_max_steps(tmp_path: Path) -> None:
    script = [tool_calls([("search", {"query": f"query {n}"})]) for n in range(3)] + [message("never")]
    done, record, _, chat = run(tmp_path, script, "--max-steps", "2")
    assert done.returncode == 1
    assert (record["status"], record["reason"]) == ("budget", "max_steps (2) reached without a final answer")
    assert len(chat.requests) == 2 and record["budget"]["max_steps"] == 2
    assert "budget: max_steps (2) reached" in done.stderr


def test_max_run_tokens(tmp_path: Path) -> None:
    script = [tool_calls([("search", {"query": "shed"})], usage={"prompt_tokens": 600, "completion_tokens": 500}),
              message("never")]
    done, record, _, chat = run(tmp_path, script, model_keys="max_run_tokens = 1000")
    assert done.returncode == 1
    assert (record["status"], record["reason"]) == ("budget", "max tokens (1,000) reached")
    assert record["tokens"] == {"prompt": 600, "completion": 500}
    assert len(chat.requests) == 1 and not steps_of(record, "tool"), "the calls of the reply that spent it do not run"


def test_max_run_tokens_of_an_endpoint_that_does_not_count(tmp_path: Path) -> None:
    """Without ``usage`` the tokens are estimated, the prompt's from what was sent (``estimate_tokens``
    of its JSON), so the budget still holds."""
    script = [tool_calls([("search", {"query": "shed"})], usage={}), message("never", usage={})]
    done, record, _, chat = run(tmp_path, script, model_keys="max_run_tokens = 300")
    assert done.returncode == 1
    assert (record["status"], record["reason"]) == ("budget", "max tokens (300) reached")
    sent = estimate_tokens(json.dumps(chat.requests[0], ensure_ascii=False))
    assert sent > 300 and abs(record["tokens"]["prompt"] - sent) < sent * 0.1


@pytest.mark.anyio
async def test_a_python_tool_that_crashes_is_fed_back(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An extension tool's own bug is a tool error the model reads (``internal``, as over MCP), never
    the end of the run; its details stay in the log."""
    from context_harness import config as config_mod
    from context_harness.core.face import RunRequest
    from context_harness.core.harness import Harness
    from context_harness.extensions import Extensions
    from context_harness.tools.base import FunctionTool

    async def crash(arguments: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("internal detail /srv/private")

    tool = FunctionTool(name="flaky", title=None, description="Fails", input_schema={"type": "object"}, run=crash)
    with ScriptedChat([tool_calls([("flaky", {})]), message("Recovered.")], model="local") as chat:
        config = run_workspace(tmp_path, chat.url,
                               extra='[agents.user]\ndescription = "Uses flaky"\ntools = ["flaky"]\nsystem_prompt = "x"\n')
        async with Harness.open(config_mod.load(config), Extensions(tools=[(tool, "a test")])) as harness:
            record = await harness.run_agent(RunRequest(agent="user", task="Go"))
    assert (record["status"], record["answer"]) == ("finished", "Recovered.")
    [step] = steps_of(record, "tool")
    assert step["outcome"] == "error"
    fed = json.loads(fed_back(chat, 1))["error"]
    assert fed["code"] == "internal" and "/srv/private" not in json.dumps(record) + fed["message"]
    assert "internal detail /srv/private" in caplog.text, "the traceback is in the log"
