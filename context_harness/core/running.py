"""``Running``: an agent driven by a chat model through its own tools (``ctx agent run``, the MCP tool
``agent_run``, the console's Run). Mixed into ``Harness``.

The loop: the agent resolved as for a client (skills, injected context, arguments) becomes the system
message and the task the user message; the agent's tools are offered with their real JSON Schemas;
each tool call goes through ``call_tool`` (the same scope, limits and sandbox as over MCP), its result
is fed back, until the model answers without a call or a budget ends the run (``max_steps``,
``max_seconds``, tokens). What the model gets wrong (a malformed call, an unknown tool, a tool's
error) is fed back to it; what the endpoint gets wrong (``ModelError``) ends the run; either way it is
a step of the record, never a traceback.

Writes need approval: a tool that is not read-only or is destructive (its MCP annotations) runs only
when ``--yes`` was given, the user's own config pre-approves the agent (``agents.base.standing_grant``:
never a file that came with a registry or a clone), or the ``approver`` (a person at a terminal, in the
console, or the MCP client's user) says yes to that very call (``Approval``: its id and digest);
otherwise the call is refused and the model told so. A run started from a server that serves one agent
may only run agents whose tools fit inside that agent's (``RunRequest.within``).

Budgets hold inside a reply too: before every tool call the run's time and tokens are checked, a reply
may ask for at most ``CALLS_PER_REPLY`` calls, and a tool call waits at most for the time the run has
left. An endpoint that reports no token counts is charged an estimate (``common.text.estimate_tokens``:
a token per ASCII word or mark and per Chinese, Japanese or Korean character).

Each step is appended to the record in the workspace as it happens (``add_run_step``), so a crash leaves
what happened so far and a long run costs the same per step; secrets are scrubbed from every string in
it (``common.redaction``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from context_harness.common import jsonlimits
from context_harness.common.redaction import redact
from context_harness.errors import (
    BadRequest,
    Forbidden,
    HarnessError,
    ModelError,
    NotConfigured,
    NotFound,
    as_harness_error,
)

if TYPE_CHECKING:  # the agents' code is imported when a run starts: a knowledge base opened to search imports none
    # of it (issue 50)
    from context_harness.agents.base import AgentSpec
    from context_harness.agents.chat import ChatModel, ChatReply, ToolCall
    from context_harness.agents.runs import Approver, RunRequest, StepListener
    from context_harness.config import Config, ModelConfig
    from context_harness.core.catalog import AgentResolution, Catalog, ToolResult
    from context_harness.store.backend import DocumentStorage
    from context_harness.tools.base import Tool

RESULT_CHARS = 16_000  # of a tool's result fed back to the model (get is capped below this already)
RECORD_CHARS = 4_000  # of a tool's result or a message kept in the run's record
REPEATS = 3  # the same call with the same arguments this many times in a row ends the run
NOT_OFFERED = frozenset({"agent_run"})  # a run does not start runs
CALLS_PER_REPLY = 32  # tool calls run from one reply; the rest are refused, each told so
CHARS_PER_TOKEN = 4  # the estimate charged when an endpoint reports no token counts




@dataclass
class Budget:
    steps: int
    seconds: float
    tokens: int


class Running:
    """Mixed into ``Harness`` (which provides what the ``TYPE_CHECKING`` block declares)."""

    if TYPE_CHECKING:
        config: Config
        store: DocumentStorage | None
        _services: Any  # core.services.Services while serving (its task group runs background runs)

        @property
        def catalog(self) -> Catalog: ...

        async def run_blocking(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...
        async def resolve_agent(self, name: str, arguments: dict[str, Any] | None = None) -> AgentResolution: ...
        async def call_tool(self, name: str, arguments: Any, agent: str | None = None) -> ToolResult: ...

    async def run_agent(self, request: RunRequest, *, approver: Approver | None = None,
                        on_step: StepListener | None = None, model: ChatModel | None = None,
                        fallback: ChatModel | None = None) -> dict[str, Any]:
        """Run agent ``request.agent`` on ``request.task``; returns the run's record (also saved).
        ``model`` replaces the configured one; ``fallback`` (the MCP client's, through sampling) is
        used when no ``[models]`` entry is configured and neither the request nor the agent names one."""
        run = await self._prepare(request, approver, on_step, model, fallback)
        return await run.go()

    async def start_agent_run(self, request: RunRequest, *, approver: Approver | None = None) -> str:
        """Start a run in the background of a serving knowledge base (the console's Run); its id.
        What is wrong before the first step (an unknown agent or model) is raised here."""
        services = self._services
        if services is None:
            raise NotConfigured("a run in the background needs a serving knowledge base (ctx serve --http)")
        run = await self._prepare(request, approver, None, None, None)
        services.task_group.start_soon(run.go)
        return str(run.record["id"])

    async def _prepare(self, request: RunRequest, approver: Approver | None, on_step: StepListener | None,
                       model: ChatModel | None, fallback: ChatModel | None) -> Run:
        if not request.task.strip():
            raise BadRequest("the task is empty: say what the agent should do")
        from context_harness.agents.base import CLAUDE_CODE_MODELS, standing_grant
        from context_harness.agents.settings import load_settings

        spec = self.catalog.agent_library.spec(request.agent)  # NotFound, naming close matches
        spec.check_arguments(request.arguments)  # BadRequest before a run begins
        if request.within is not None:
            _check_within(spec, request.within)
        if model is None and fallback is not None and not self.config.models and not request.model and (
                spec.run.model is None or spec.run.model in CLAUDE_CODE_MODELS):
            model = fallback
        chosen, note = (model, None) if model is not None else self._chat_model(spec, request.model)
        limits = self._budget(spec, request, self.config.models.get(chosen.name))
        settings = load_settings(self.config)
        grant = standing_grant(spec, settings.approve_writes, settings.config_label)
        run = Run(self, spec, request, chosen, limits, approver, on_step, grant)
        if note:
            await run.step("note", text=note)
        if spec.run.approve == "writes" and grant is None:
            await run.step("note", text=f"agent '{spec.name}' asks that its writes need no approval ({spec.origin}); "
                           f"only your own config can grant that: add \"{spec.name}\" to [agents] approve_writes in "
                           f"{settings.config_label}. Until then each write is asked.")
        return run

    def _chat_model(self, spec: AgentSpec, override: str | None) -> tuple[ChatModel, str | None]:
        """The model a run uses: ``--model``, else the agent's, else the only (or ``default``) one."""
        from context_harness.agents.base import CLAUDE_CODE_MODELS
        from context_harness.agents.chat import OpenAIChat

        models = self.config.models
        named = override or spec.run.model
        note = None
        if named is not None and override is None and named not in models and named in CLAUDE_CODE_MODELS:
            note = f"the agent asks for Claude Code's model {named!r}; this run uses the default model"
            named = None
        if named is None:
            named = _default_model(models, self.config)
        if named not in models:
            missing = next((u for u in self.config.unavailable if u.kind == "model" and u.name == named), None)
            if missing is not None:
                raise NotConfigured(f"model {named!r} is unavailable: {missing.message}")
            known = ", ".join(sorted(models)) or "none"
            whose = "the run" if override else f"agent '{spec.name}' ({spec.origin})"
            raise NotConfigured(f"{whose} names model {named!r}, which is not configured; add a [models.{named}] "
                                f"table with url and model (configured: {known})")
        return OpenAIChat(named, models[named]), note

    def _budget(self, spec: AgentSpec, request: RunRequest, model: ModelConfig | None) -> Budget:
        steps = request.max_steps or spec.run.max_steps or (model.max_steps if model else 20)
        seconds = request.max_seconds or spec.run.max_seconds or (model.max_seconds if model else 600.0)
        return Budget(steps=steps, seconds=seconds, tokens=model.max_run_tokens if model else 200_000)

    async def agent_runs(self, limit: int = 50, agent: str | None = None) -> list[dict[str, Any]]:
        """The newest runs first, each without its steps (``step_count`` says how many)."""
        assert self.store is not None
        if not 1 <= limit <= 1000:
            raise BadRequest("limit must be between 1 and 1000")
        runs: list[dict[str, Any]] = await self.run_blocking(self.store.runs, limit, agent)
        return [orphaned(run) for run in runs]

    async def agent_run_record(self, run_id: str) -> dict[str, Any]:
        """One run's whole record, by its id or the start of it (``NotFound`` names the fix)."""
        assert self.store is not None
        wanted = run_id.strip()
        record: dict[str, Any] | None = await self.run_blocking(self.store.run, wanted) if wanted else None
        if record is not None:
            return orphaned(record)
        recent = await self.run_blocking(self.store.runs, 1000, None)
        matches = [r["id"] for r in recent if wanted and r["id"].startswith(wanted)]
        if len(matches) == 1:
            found: dict[str, Any] = await self.run_blocking(self.store.run, matches[0])
            return orphaned(found)
        if matches:
            raise BadRequest(f"run id {run_id!r} is ambiguous ({', '.join(matches[:5])}); give more of it")
        raise NotFound(f"no run {run_id!r}; `ctx agent runs` lists them")


def orphaned(record: dict[str, Any]) -> dict[str, Any]:
    """``record``, shown as ``interrupted`` when it says running but the process running it on this
    host is gone (killed, or the machine restarted): a run is never "running" forever."""
    runner = record.get("runner") or {}
    if record.get("status") != "running" or runner.get("host") != socket.gethostname():
        return record
    pid = runner.get("pid")
    if isinstance(pid, int) and pid != os.getpid() and not _alive(pid):
        return {**record, "status": "interrupted",
                "reason": f"the process running it (pid {pid}) ended before the run did"}
    return record


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _check_within(spec: AgentSpec, within: frozenset[str]) -> None:
    """A scoped caller (a server serving one agent) may run only an agent whose tools fit inside its own."""
    outside = [name for name in dict.fromkeys(spec.tools) if name not in NOT_OFFERED and name not in within]
    if outside:
        raise Forbidden(f"agent '{spec.name}' uses tools outside this server's scope ({', '.join(outside)}); "
                        f"a server serving one agent runs only agents whose tools are among its own "
                        f"({', '.join(sorted(within)) or 'none'})")


def _default_model(models: dict[str, ModelConfig], config: Config) -> str:
    if "default" in models or len(models) == 1:
        return "default" if "default" in models else next(iter(models))
    if not models:
        raise NotConfigured(f"no chat model is configured: add a [models.NAME] table (url, model) to "
                            f"{config.source_path or 'the config'}, e.g. url = \"http://127.0.0.1:11434/v1\" for "
                            "Ollama; see docs/how-to/agents.md")
    raise NotConfigured(f"several models are configured ({', '.join(sorted(models))}): name one with --model, in "
                        "the agent's model key, or call one of them [models.default]")


class Run:
    """One run: the conversation, the record, the budget and the approvals given so far."""

    def __init__(self, host: Running, spec: AgentSpec, request: RunRequest, model: ChatModel, budget: Budget,
                 approver: Approver | None, on_step: StepListener | None, grant: str | None = None) -> None:
        self.host, self.spec, self.request, self.model, self.budget = host, spec, request, model, budget
        self.approver, self.on_step, self.grant = approver, on_step, grant
        self.always: set[str] = set()  # tools a person said "always" to
        self.started = time.monotonic()
        self.messages: list[dict[str, Any]] = []
        self.calls: list[str] = []  # each call's name and arguments, to see a loop
        self.record: dict[str, Any] = {
            "id": request.id or new_run_id(), "agent": spec.name, "task": redact(request.task), "model": model.name,
            "arguments": _scrub(dict(request.arguments)), "status": "running", "reason": None,
            "started_at": _now(), "ended_at": None, "tokens": {"prompt": 0, "completion": 0}, "answer": None,
            "runner": {"host": socket.gethostname(), "pid": os.getpid()},
            "budget": {"max_steps": budget.steps, "max_seconds": budget.seconds, "max_tokens": budget.tokens},
            "steps": [],
        }

    # -- the loop ---------------------------------------------------------------------------------

    async def go(self) -> dict[str, Any]:
        try:
            tools = await self._start()
            await self._loop(tools)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._end("stopped", "stopped by the user (interrupted)")
            raise
        except KeyboardInterrupt:
            await self._end("stopped", "stopped by the user (Ctrl-C)")
            raise
        except HarnessError as exc:
            await self._end("failed", exc.message, error=exc)
        except Exception as exc:  # recorded, never a traceback on a rim
            error = as_harness_error(exc, f"agent run {self.record['id']}")
            await self._end("failed", error.message, error=error)
        return self.record

    async def _start(self) -> list[Tool]:
        resolution = await self.host.resolve_agent(self.spec.name, self.request.arguments or None)
        prompt = resolution.prompt
        self.messages = [{"role": "system", "content": prompt.system}]
        self.messages += [{"role": m.role, "content": m.content} for m in prompt.messages]
        self.messages.append({"role": "user", "content": self.request.task})
        tools, missing = self._offered(prompt.tools)
        await self.step("start", system=_clip(prompt.system), tools=[t.name for t in tools], not_offered=missing,
                  searches=resolution.searches)
        return tools

    def _offered(self, names: list[str]) -> tuple[list[Tool], list[str]]:
        toolset = self.host.catalog.toolset
        tools = [tool for name in dict.fromkeys(names) if name not in NOT_OFFERED and (tool := toolset.get(name))]
        return tools, [n for n in names if toolset.get(n) is None or n in NOT_OFFERED]

    async def _loop(self, tools: list[Tool]) -> None:
        schemas = [_schema(tool) for tool in tools]
        by_name = {tool.name: tool for tool in tools}
        for _ in range(self.budget.steps):
            if self._left() <= 0:
                return await self._end("budget", f"max_seconds ({self.budget.seconds:g} s) reached")
            reply = await self._ask(schemas, self._left())
            if reply is None:
                return None
            if not reply.tool_calls:
                self.record["answer"] = reply.content
                return await self._end("finished", "the model gave its answer")
            if await self._calls(reply.tool_calls, by_name):
                return None
        return await self._end("budget", f"max_steps ({self.budget.steps}) reached without a final answer")

    async def _calls(self, calls: list[ToolCall], tools: dict[str, Tool]) -> bool:
        """Run one reply's calls, the budget checked before each; True when the run ended. Every call
        gets an answer (the chat protocol wants one per call id), those not run a refusal."""
        for index, call in enumerate(calls):
            ended = self._over_budget()
            if ended is None and index >= CALLS_PER_REPLY:
                reason = f"one reply may ask for at most {CALLS_PER_REPLY} tool calls; this one was not run"
                await self._feed(call, {"error": {"code": "refused", "message": reason}}, "refused", reason)
                continue
            if ended is not None:
                await self._end("budget", ended)
                return True
            if await self._call(call, tools):
                return True
        return False

    def _left(self) -> float:
        return self.budget.seconds - (time.monotonic() - self.started)

    def _over_budget(self) -> str | None:
        """Why the run must end now (its time or its tokens are spent), or None."""
        if self._left() <= 0:
            return f"max_seconds ({self.budget.seconds:g} s) reached"
        if self._spent():
            return f"max tokens ({self.budget.tokens:,}) reached"
        return None

    async def _ask(self, schemas: list[dict[str, Any]], left: float) -> ChatReply | None:
        began = time.monotonic()
        try:
            reply = await self.model.complete(self.messages, schemas, left)
        except ModelError as exc:
            await self.step("fault", text=exc.message)
            if time.monotonic() - self.started >= self.budget.seconds - 0.01:  # the run's time ran out, not the model's
                await self._end("budget", f"max_seconds ({self.budget.seconds:g} s) reached waiting for the model")
            else:
                await self._end("failed", exc.message, error=exc)
            return None
        spent = {"prompt": reply.prompt_tokens, "completion": reply.completion_tokens}
        estimated = spent["prompt"] + spent["completion"] <= 0
        if estimated:  # an endpoint that reports nothing is charged what the text costs, roughly
            spent = _estimate(self.messages, reply)
        tokens = self.record["tokens"]
        tokens["prompt"] += spent["prompt"]
        tokens["completion"] += spent["completion"]
        self.messages.append(reply.message())
        await self.step("model", text=_clip(reply.content), seconds=round(time.monotonic() - began, 3),
                        calls=[{"id": c.id, "tool": c.name, "arguments": _clip(c.arguments)}
                               for c in reply.tool_calls[:CALLS_PER_REPLY]],
                        tokens={**spent, **({"estimated": True} if estimated else {})},
                        **({"calls_asked": len(reply.tool_calls)} if len(reply.tool_calls) > CALLS_PER_REPLY else {}))
        return reply

    def _spent(self) -> bool:
        tokens = self.record["tokens"]
        return bool(tokens["prompt"] + tokens["completion"] >= self.budget.tokens)

    async def _call(self, call: ToolCall, tools: dict[str, Tool]) -> bool:
        """Run one tool call and feed its result back; True when the run must end (a loop)."""
        tool = tools.get(call.name)
        arguments, problem = _arguments(call.arguments)
        if tool is None:
            offered = ", ".join(tools) or "none"
            problem = f"unknown tool {call.name!r}: this agent's tools are {offered}"
        if problem is not None:
            await self._feed(call, {"error": {"code": "bad_request", "message": problem}}, "refused", problem)
            return False
        signature = f"{call.name} {json.dumps(arguments, sort_keys=True)}"
        self.calls.append(signature)
        if len(self.calls) >= REPEATS and len(set(self.calls[-REPEATS:])) == 1:
            reason = f"the model called {call.name} with the same arguments {REPEATS} times in a row"
            await self._feed(call, {"error": {"code": "loop", "message": reason}}, "refused", reason)
            await self._end("failed", reason + "; the run stopped")
            return True
        assert tool is not None
        if not await self._approved(tool, arguments, call):
            return False
        if (ended := self._over_budget()) is not None:  # the approval may have taken the rest of the time
            await self._end("budget", ended)
            return True
        began = time.monotonic()
        try:
            with anyio.move_on_after(self._left()) as waited:
                result = await self.host.call_tool(call.name, arguments, agent=None)
        except Exception as exc:  # a tool's bug too is fed back (as internal, as MCP does; the log has its traceback)
            error = as_harness_error(exc, f"tool {call.name!r}")
            await self._feed(call, error.to_dict(), "error", error.message, began)
            return False
        if waited.cancelled_caught:
            reason = f"{call.name} did not finish within the run's max_seconds ({self.budget.seconds:g} s)"
            await self._feed(call, {"error": {"code": "timeout", "message": reason}}, "timeout", reason, began)
            await self._end("budget", f"max_seconds ({self.budget.seconds:g} s) reached during a call of {call.name}")
            return True
        await self._feed(call, None, "ok", result.text, began)
        return False

    async def _approved(self, tool: Tool, arguments: dict[str, Any], call: ToolCall) -> bool:
        """Whether a call may run: read-only tools may; others need a standing approval or a person's yes."""
        why = needs_approval(tool)
        if why is None:
            return True
        by = self._standing_approval(tool.name)
        refused_by = "a person said no" if self.approver is not None else "no one could be asked"
        from context_harness.agents.runs import Approval

        asked = Approval(tool.name, arguments, why)
        if by is None and self.approver is not None:
            answer = "no"
            with anyio.move_on_after(max(0.0, self._left())) as waited:
                answer = await self.approver(asked)  # a client may never answer
            if waited.cancelled_caught:
                refused_by = f"no answer within the run's max_seconds ({self.budget.seconds:g} s)"
            if answer == "always":
                self.always.add(tool.name)
            by = {"yes": "a person", "always": "a person (always, for this run)"}.get(answer)
        await self.step("approval", tool=tool.name, call=call.id, request=asked.id, digest=asked.digest,
                        approved=by is not None, by=by or refused_by)
        if by is not None:
            return True
        reason = f"{tool.name} {why} and was not approved" + (
            "" if self.approver is not None else
            ": no one could be asked (no terminal, and no client that asks its user); approve writes when the "
            "run starts (ctx agent run --yes, the console's box) or pre-approve the agent in your own config "
            "([agents] approve_writes)")
        await self._feed(call, {"error": {"code": "refused", "message": reason}}, "refused", reason)
        return False

    def _standing_approval(self, tool: str) -> str | None:
        if self.request.yes:
            return "the run's start (--yes, or the console's approve-every-write box)"
        if self.grant is not None:
            return self.grant
        if tool in self.always:
            return "a person (always, for this run)"
        return None

    async def _feed(self, call: ToolCall, payload: dict[str, Any] | None, outcome: str, text: str,
              began: float | None = None) -> None:
        content = text if payload is None else json.dumps(payload)
        if len(content) > RESULT_CHARS:
            content = content[:RESULT_CHARS] + f"\n[… cut at {RESULT_CHARS:,} characters]"
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        fields: dict[str, Any] = {"tool": call.name, "call": call.id, "outcome": outcome, "result": _clip(text)}
        if began is not None:
            fields["seconds"] = round(time.monotonic() - began, 3)
        await self.step("tool", **fields)

    # -- the record -------------------------------------------------------------------------------

    async def step(self, kind: str, **fields: Any) -> None:
        """Add a step to the record, save the record, and tell the listener."""
        entry = _scrub({"kind": kind, "at": _now(), **fields})
        self.record["steps"].append(entry)
        await self._save(entry)
        if self.on_step is not None:
            told = self.on_step(entry)
            if told is not None:
                await told

    async def _end(self, status: str, reason: str, error: HarnessError | None = None) -> None:
        if self.record["status"] != "running":
            return
        self.record.update(status=status, reason=redact(reason), ended_at=_now(),
                           seconds=round(time.monotonic() - self.started, 3))
        if error is not None:
            self.record["error"] = {"code": error.code, "message": error.message}
        await self.step("end", status=status, reason=reason)

    async def _save(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` and the record's head (its status, tokens, answer) in one transaction: a
        step costs the same at the 2,000th as at the first (the whole record was rewritten each time)."""
        assert self.host.store is not None
        self.record["answer"] = redact(self.record["answer"]) if self.record["answer"] else self.record["answer"]
        head = {key: value for key, value in self.record.items() if key != "steps"}
        await self.host.run_blocking(self.host.store.add_run_step, head, entry)


def needs_approval(tool: Tool) -> str | None:
    """Why ``tool`` needs approval ("writes", "is destructive"), or None for a read-only tool."""
    hints = tool.annotations or {}
    if hints.get("destructiveHint") is True:
        return "is destructive"
    if hints.get("readOnlyHint") is not True:
        return "writes"
    return None


def _estimate(messages: list[dict[str, Any]], reply: ChatReply) -> dict[str, int]:
    """Tokens of a request and its reply, estimated from their characters (``CHARS_PER_TOKEN``)."""
    sent = sum(len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or "")) for m in messages)
    answered = len(reply.content or "") + sum(len(c.name) + len(c.arguments) for c in reply.tool_calls)
    return {"prompt": sent // CHARS_PER_TOKEN + 1, "completion": answered // CHARS_PER_TOKEN + 1}


def _arguments(text: str) -> tuple[dict[str, Any], str | None]:
    if not text.strip():
        return {}, None
    try:
        value = jsonlimits.loads(text)  # past MAX_DEPTH: TooDeep, a JSONDecodeError fed back like the rest
    except json.JSONDecodeError as exc:
        return {}, f"the arguments are not JSON ({exc.msg}: character {exc.pos}): send a JSON object"
    if not isinstance(value, dict):
        return {}, "the arguments must be a JSON object"
    return value, None


def _schema(tool: Tool) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool.name, "description": tool.description,
                                             "parameters": tool.input_schema}}


def _clip(text: str) -> str:
    return text if len(text) <= RECORD_CHARS else text[:RECORD_CHARS] + f" [… {len(text) - RECORD_CHARS:,} more]"


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def new_run_id() -> str:
    """A run's id: its start time (sortable) and four random hex digits."""
    return dt.datetime.now(dt.UTC).strftime("r%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["Running", "needs_approval", "new_run_id"]
