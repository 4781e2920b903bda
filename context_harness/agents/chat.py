"""Chat models for ``ctx agent run``: an OpenAI-compatible ``/chat/completions`` endpoint (``[models.NAME]``).

Works with Ollama, llama.cpp's server, vLLM, LM Studio and hosted APIs. One request per step, not
streamed; the reply is read in pieces and cut off at ``max_response_bytes``, and every wait is
bounded (``CONNECT_SECONDS``, ``timeout``, and what is left of the run's ``max_seconds``). Whatever
goes wrong at the endpoint (down, slow, an HTML page, a reply too large, JSON without a message)
is a ``ModelError`` naming the model, its URL and the key to look at; the run records it as a step.

A reply's tool calls keep their ``arguments`` as the text the model wrote: whether that is a JSON
object is the loop's question (a malformed call is fed back to the model, not fatal; so are arguments
nested past ``jsonlimits.MAX_DEPTH``). A reply nested past ``REPLY_DEPTH``, or whose ``tool_calls`` is
not a list of objects, is a ``ModelError``; an answer in content parts keeps its text parts, joined.
"""

from __future__ import annotations

import functools
import json
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from context_harness.common import jsonlimits
from context_harness.common.redaction import redact
from context_harness.common.text import estimate_tokens
from context_harness.config import ModelConfig
from context_harness.errors import ModelError

if TYPE_CHECKING:
    import httpx2 as httpx

PREVIEW_CHARS = 200  # of an answer that is not a chat reply, quoted in the error
PREVIEW_WINDOW = 64 * 1024  # bytes of it scrubbed of secrets before the cut
REPLY_DEPTH = jsonlimits.MAX_DEPTH + 8  # a completion around tool-call arguments sent as an object of MAX_DEPTH
CONNECT_SECONDS = 10.0  # to reach the endpoint (within the reply's timeout)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # as the model wrote it (JSON text, or not)


@dataclass
class ChatReply:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None

    def message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation (OpenAI's shape)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}} for c in self.tool_calls]
        return out


class ChatModel(Protocol):
    """What the run loop talks to: an endpoint of ``[models]``, or the MCP client's model (sampling)."""

    name: str

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       timeout: float) -> ChatReply: ...


class OpenAIChat:
    """``[models.NAME]``: POST ``URL/chat/completions`` with the conversation and the tools' schemas."""

    def __init__(self, name: str, config: ModelConfig) -> None:
        self.name = name
        self.config = config
        self.url = config.url.rstrip("/") + "/chat/completions"
        self.where = f"[models.{name}]"

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       timeout: float) -> ChatReply:
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "stream": False}
        if tools:
            body["tools"] = tools
        if self.config.max_tokens is not None:
            body["max_tokens"] = self.config.max_tokens
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        raw = await self._post(body, min(timeout, self.config.timeout))
        return self._reply(raw, estimate_tokens(json.dumps(body, ensure_ascii=False)))

    async def _post(self, body: dict[str, Any], timeout: float) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        import httpx2 as httpx  # the MCP SDK's HTTP client (httpx's API); imported on use: a server starts without it

        limits = httpx.Timeout(timeout, connect=min(CONNECT_SECONDS, timeout))
        try:
            async with httpx.AsyncClient(timeout=limits, follow_redirects=False, trust_env=False,
                                         verify=_tls()) as client:
                with anyio.fail_after(timeout):  # httpx bounds each read, not their sum (a trickle)
                    async with client.stream("POST", self.url, json=body, headers=headers) as response:
                        data = await self._read(response)
                        status = response.status_code
        except (TimeoutError, httpx.TimeoutException):
            raise ModelError(f"model '{self.name}' ({self.url}) did not answer within {round(timeout, 1):g} s "
                             f"({self.where} timeout, or the run's max_seconds)") from None
        except httpx.HTTPError as exc:
            raise ModelError(f"model '{self.name}': cannot reach {self.url} ({_reason(exc)}); is the server "
                             f"running? ({self.where} url)") from None
        except httpx.InvalidURL as exc:
            raise ModelError(f"model '{self.name}': {self.url} is not a URL it can reach ({exc}); fix {self.where} "
                             "url") from None
        if status != 200:
            raise ModelError(f"model '{self.name}' ({self.url}) answered HTTP {status}: {_preview(data)}")
        return data

    async def _read(self, response: httpx.Response) -> bytes:
        cap = self.config.max_response_bytes
        parts: list[bytes] = []
        size = 0
        async for piece in response.aiter_bytes():
            size += len(piece)
            if size > cap:
                raise ModelError(f"model '{self.name}' ({self.url}) answered more than {cap:,} bytes "
                                 f"({self.where} max_response_bytes); the reply was not read")
            parts.append(piece)
        return b"".join(parts)

    def _reply(self, data: bytes, sent: int) -> ChatReply:
        """The reply in ``data``; ``sent``: the request's size in tokens, estimated (``estimate_tokens``: a
        Chinese, Japanese or Korean character is a token, as an ASCII word is)."""
        try:
            payload = jsonlimits.loads(data, max_depth=REPLY_DEPTH)
        except jsonlimits.TooDeep:
            raise ModelError(f"model '{self.name}' ({self.url}) answered JSON nested more than {REPLY_DEPTH} levels "
                             "deep; the reply was not read") from None
        except ValueError:
            raise ModelError(f"model '{self.name}' ({self.url}) answered something that is not JSON: "
                             f"{_preview(data)}") from None
        try:
            choice = payload["choices"][0]
            message = choice["message"]
            assert isinstance(message, dict)
        except (KeyError, IndexError, TypeError, AssertionError):
            raise ModelError(f"model '{self.name}' ({self.url}) answered JSON without choices[0].message: "
                             f"{_preview(data)}") from None
        calls = message.get("tool_calls") or []
        wrong = _not_calls(calls)
        if wrong:
            raise ModelError(f"model '{self.name}' ({self.url}) answered tool_calls that is not a list of objects "
                             f"({wrong}): {_preview(data)}")
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        reply = ChatReply(content=_text(message.get("content")),
                          tool_calls=[_tool_call(raw, n) for n, raw in enumerate(calls, 1)],
                          finish_reason=choice.get("finish_reason") if isinstance(choice, dict) else None)
        reply.prompt_tokens = _count(usage.get("prompt_tokens"), sent)  # an endpoint that does not count: estimated
        said = reply.content + "".join(call.arguments for call in reply.tool_calls)
        reply.completion_tokens = _count(usage.get("completion_tokens"), estimate_tokens(said))
        return reply


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every request, the one the client would make (the system's trust store);
    it builds a new one per client otherwise, ~30 ms each."""
    import httpx2

    return httpx2.create_ssl_context()


_KINDS = {str: "a string", dict: "an object", list: "a list", bool: "a boolean", int: "a number", float: "a number",
          type(None): "null"}


def _not_calls(calls: Any) -> str | None:
    """What is wrong with a reply's ``tool_calls`` (a list of objects), or None."""
    if not isinstance(calls, list):
        return _KINDS.get(type(calls), "not a list")
    for n, item in enumerate(calls, 1):
        if not isinstance(item, dict):
            return f"item {n} is {_KINDS.get(type(item), 'not an object')}"
    return None


def _text(content: Any) -> str:
    """The answer's text: a string, or the text parts of content parts (``[{"type": "text", "text": ...}]``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content
                       if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))
    return ""


def _tool_call(raw: Any, n: int) -> ToolCall:
    """A tool call as the model wrote it; a missing name or id stays visible as "" / call_N."""
    raw = raw if isinstance(raw, dict) else {}
    function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):  # some servers send the object itself
        arguments = json.dumps(arguments)
    name = function.get("name")
    call_id = raw.get("id")
    return ToolCall(id=call_id if isinstance(call_id, str) and call_id else f"call_{n}",
                    name=name if isinstance(name, str) else "", arguments=arguments)


def _count(value: Any, estimate: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else estimate


def _preview(data: bytes) -> str:
    # Secrets are hidden before the cut: a key echoed escaped or encoded is many times its length, and
    # a cut through it would keep its first part (``HarnessError`` redacts only what is left).
    text = redact(data[:PREVIEW_WINDOW].decode("utf-8", "replace")).strip()
    text = " ".join(text.split())
    return repr(text[:PREVIEW_CHARS] + ("…" if len(text) > PREVIEW_CHARS else "")) if text else "(an empty body)"


def _reason(exc: httpx.HTTPError) -> str:
    text = str(exc).strip()
    cause: BaseException | None = exc
    for _ in range(8):  # "All connection attempts failed" hides the refusal among its causes
        if cause is None:
            break
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
            return "connection refused"
        cause = cause.__cause__ or cause.__context__
    return text or exc.__class__.__name__


__all__ = ["ChatModel", "ChatReply", "OpenAIChat", "ToolCall"]
