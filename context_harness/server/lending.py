"""What an MCP client lends an agent run it starts (``agent_run``): its own model through sampling
(``sampling/createMessage``, with tools where the client declares ``sampling.tools``), and a person's
approval of each write through elicitation (``elicitation/create``, a one-field form).

``lend(session)`` returns the ``ClientSide`` for the calling session: each part only when the client
declared the capability, and each step of the run as a progress notification when the call asked for
progress. The run loop (``core/running.py``) speaks OpenAI's message shapes; this
module translates them to MCP's sampling messages and back. Sampling is deprecated in the 2026-07-28
protocol (SEP-2577) but is what clients of 2025-11-25 offer; its warnings are silenced here.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import mcp.types as t

from context_harness.common.text import estimate_tokens
from context_harness.core.face import Approval, Approver, ChatReply, ClientSide, StepListener, ToolCall
from context_harness.errors import ModelError

MAX_REPLY_TOKENS = 4096  # what a sampled reply may generate (the client may lower it)
CHOICES = ("yes", "no", "always")


def lend(session: Any) -> ClientSide:
    """The calling client's model and approvals, each where it declared the capability and the
    connection can carry a request to it (the 2026-07-28 era's tools/call has no back-channel)."""
    caps = getattr(session, "client_capabilities", None) if getattr(session, "can_send_request", True) else None
    sampling = caps.sampling if caps is not None else None
    elicitation = caps.elicitation if caps is not None else None
    model = SamplingChat(session, tools=sampling.tools is not None) if sampling is not None else None
    asks = elicitation is not None and (elicitation.form is not None or elicitation.url is None)
    return ClientSide(model=model, approver=_approver(session) if asks else None, on_step=_progress(session))


class SamplingChat:
    """A ``ChatModel`` that is the MCP client's own model, reached through ``sampling/createMessage``."""

    name = "sampling"

    def __init__(self, session: Any, *, tools: bool) -> None:
        self.session = session
        self.tools = tools

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       timeout: float) -> ChatReply:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        sampled = to_sampling(messages, self.tools)
        offered = [_mcp_tool(schema) for schema in tools] if self.tools and tools else None
        try:
            import anyio

            with anyio.fail_after(timeout), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = await self.session.create_message(sampled, max_tokens=MAX_REPLY_TOKENS,
                                                           system_prompt=system or None, tools=offered)
        except TimeoutError:
            raise ModelError(f"the client's model (sampling) did not answer within {round(timeout, 1):g} s") from None
        except Exception as exc:  # the client refused (its user said no) or failed
            raise ModelError(f"the client's model (sampling) failed: {getattr(exc, 'message', None) or exc}") \
                from None
        return from_sampling(result)


def to_sampling(messages: list[dict[str, Any]], tools: bool) -> list[t.SamplingMessage]:
    """OpenAI-shaped messages (no system) -> sampling messages; tool results join one user message."""
    out: list[t.SamplingMessage] = []
    for message in messages:
        role = message["role"]
        if role == "system":
            continue
        if role == "tool":
            block = t.ToolResultContent(tool_use_id=message["tool_call_id"],
                                        content=[t.TextContent(type="text", text=message["content"])])
            if tools and out and out[-1].role == "user" and isinstance(out[-1].content, list) and all(
                    isinstance(b, t.ToolResultContent) for b in out[-1].content):
                out[-1].content.append(block)
            elif tools:
                out.append(t.SamplingMessage(role="user", content=[block]))
            else:
                out.append(t.SamplingMessage(role="user", content=t.TextContent(
                    type="text", text=f"(result of {message['tool_call_id']}) {message['content']}")))
            continue
        blocks: list[Any] = [t.TextContent(type="text", text=message.get("content") or "")]
        for call in message.get("tool_calls") or []:
            if tools:
                blocks.append(t.ToolUseContent(id=call["id"], name=call["function"]["name"],
                                               input=_object(call["function"]["arguments"])))
        kept = [b for b in blocks if not isinstance(b, t.TextContent) or b.text] or blocks[:1]
        out.append(t.SamplingMessage(role=role, content=kept if len(kept) > 1 else kept[0]))
    return out


def from_sampling(result: Any) -> ChatReply:
    """A sampled reply -> ``ChatReply`` (tokens estimated: sampling does not count them)."""
    content = result.content if isinstance(result.content, list) else [result.content]
    text = "".join(b.text for b in content if isinstance(b, t.TextContent))
    calls = [ToolCall(id=b.id, name=b.name, arguments=json.dumps(b.input)) for b in content
             if isinstance(b, t.ToolUseContent)]
    said = text + "".join(c.arguments for c in calls)
    return ChatReply(content=text, tool_calls=calls, completion_tokens=estimate_tokens(said),
                     finish_reason=getattr(result, "stop_reason", None))


def _object(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"_unparsed": arguments}
    return value if isinstance(value, dict) else {"_value": value}


def _mcp_tool(schema: dict[str, Any]) -> t.Tool:
    function = schema["function"]
    return t.Tool(name=function["name"], description=function.get("description") or None,
                  input_schema=function.get("parameters") or {"type": "object"})


def _progress(session: Any) -> StepListener:
    """Each step as a progress notification (a no-op when the call carried no progress token): the
    client sees the run move, and clients that reset their timeout on progress keep waiting."""
    count = 0

    async def told(step: dict[str, Any]) -> None:
        nonlocal count
        count += 1
        what = step.get("tool") or step.get("status") or ""
        try:
            await session.report_progress(count, None, f"{step.get('kind')} {what}".strip())
        except Exception:  # a client gone or a transport without progress: the run goes on
            return

    return told


def _approver(session: Any) -> Approver:
    """Each write asked as its own ``elicitation/create`` request: the client's answer comes back on
    that request's JSON-RPC id, so it answers this call once and no other. The text names the call
    (its id and digest) and shows every argument, long values shortened (``Approval.shown``)."""

    async def ask(approval: Approval) -> str:
        schema = {"type": "object", "required": ["decision"], "properties": {"decision": {
            "type": "string", "title": "Allow this call?", "enum": list(CHOICES),
            "description": "yes: this call; always: this tool for the rest of the run; no: refuse it"}}}
        text = (f"An agent run wants to call {approval.tool}, which {approval.why}, with: {approval.shown()} "
                f"(call {approval.id}, digest {approval.digest[:12]})")
        try:
            result = await session.elicit_form(text, schema)
        except Exception:  # the client could not ask: nothing written without a yes
            return "no"
        decision = (result.content or {}).get("decision") if result.action == "accept" else None
        return decision if decision in CHOICES else "no"

    return ask


__all__ = ["SamplingChat", "from_sampling", "lend", "to_sampling"]
