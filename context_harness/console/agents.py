"""The console's agents pages: every agent (all formats); the builder of Markdown agents (new and
existing: the server's tools as toggles, arguments as rows, skills grouped by category and a new
skill written on the spot, a live preview of the resolved prompt with sample values and a "Try it"
of the unsaved agent, both resolved by the core: ``preview_agent_file``); and "Try it" of a saved
agent, which shows its prompt as ``prompts/get`` and ``agent_zoo_inject`` return it, through the
same Harness calls (``resolve_agent``, shown as ``prompts/get`` sends it:
``agents.render.prompt_get_messages``; ``zoo_inject``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from context_harness.console.agent_form import choices, draft_from_form, skill_errors
from context_harness.console.pages import Pages, error_message
from context_harness.core.face import (
    CLAUDE_CODE_TOOLS,
    SKILL_FILE,
    AgentDraft,
    AgentPreview,
    ArgumentRow,
    Skill,
    agent_text,
    check_draft,
    checked_text,
    draft_from_file,
    parse_skill,
    prompt_get_messages,
    render_json,
    skill_text,
)
from context_harness.errors import ConfigError, HarnessError, NotFound

WHERE = {"markdown": "a Markdown agent file", "toml": "an [agents.NAME] table of ctx.toml",
         "lua": "a Lua agent script", "python": "a Python agent module"}
UNCATEGORISED = "Uncategorised"
LOOKS = ("preview", "try")  # the form's actions that write nothing


class AgentPages:
    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.harness = pages.harness

    def routes(self) -> list[BaseRoute]:
        return [Route("/agents", self.listing, methods=["GET"]),
                Route("/new-agent", self.new, methods=["GET", "POST"]),
                Route("/agent-preview", self.preview, methods=["POST"]),
                Route("/agents/{name}/edit", self.edit, methods=["GET", "POST"]),
                Route("/agents/{name}", self.try_it, methods=["GET"])]

    async def listing(self, request: Request) -> Response:
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        base = f"{self.harness.config.base_dir.resolve()}/"
        origins = {name: origin.replace(base, "") for name, origin in self.harness.agent_origins().items()}
        return self.pages.render(request, "agents.html", agents=self.harness.agents(), where=WHERE,
                                 origins=origins, folder=self._shown(self.harness.agent_folder()))

    # -- the editor ------------------------------------------------------------------------------

    async def new(self, request: Request) -> Response:
        if request.method == "GET":
            if not self.pages.sessions.logged_in(request):
                return self.pages.login_redirect(request)
            return self._form(request, AgentDraft(), None)
        refused = await self._refused(request)
        if refused is not None:
            return refused
        return await self._post(request, None)

    async def edit(self, request: Request) -> Response:
        name = request.path_params["name"]
        if request.method == "GET" and not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        if request.method == "POST":
            refused = await self._refused(request)
            if refused is not None:
                return refused
        found = self.harness.agent_file(name)
        if found is None:
            return self._not_editable(request, name)
        if request.method == "POST":
            return await self._post(request, name)
        meta, body = found.parts()
        try:
            if not meta:
                raise ConfigError("its front matter is missing or is not valid YAML")
            draft = draft_from_file(meta, body, found.path.stem, found.version)
        except ConfigError as exc:  # changed on disk since it loaded
            return self.pages.render(request, "message.html", 400, title="Agent file does not load",
                                     message=f"{self._shown(found.path)} does not load ({exc.message}): fix it in "
                                             "the file, then reopen the editor")
        saved = self._shown(found.path) if request.query_params.get("saved") == "1" else None
        return self._form(request, draft, name, saved=saved)

    def _not_editable(self, request: Request, name: str) -> Response:
        info = next((a for a in self.harness.agents() if a.name == name), None)
        missing = next((u for u in self.harness.unavailable_agents() if u.name == name), None)
        if info is None and missing is not None:
            return self.pages.render(request, "message.html", 400, title="Agent unavailable",
                                     message=f"agent {name!r} did not load, so it cannot be edited here: "
                                             f"{missing.message}")
        if info is None:
            return self.pages.render(request, "message.html", 404, title="No such agent",
                                     message=f"unknown agent {name!r}; the Agents page lists them")
        return self.pages.render(request, "message.html", 400, title="Read-only here",
                                 message=f"agent {name!r} is defined in {WHERE.get(info.source, info.source)}; "
                                         "the console edits Markdown agent files only: change it where it lives")

    async def _refused(self, request: Request) -> Response | None:
        """A preview or a try writes nothing: the session and its CSRF token are enough (read-only
        mode too); anything else is a write."""
        form = await request.form()
        if form.get("action") in LOOKS:
            return self._refused_look(request, form)
        return await self.pages.refused_write(request)

    def _refused_look(self, request: Request, form: FormData) -> Response | None:
        if not self.pages.sessions.logged_in(request):
            return self.pages.render(request, "message.html", 401, title="Log in first",
                                     message="This action needs you to log in with the server's token.")
        csrf = form.get("csrf")
        if not self.pages.sessions.csrf_ok(request, csrf if isinstance(csrf, str) else ""):
            return self.pages.render(request, "message.html", 403, title="Refused",
                                     message="The form's CSRF token is missing or stale: reload the page and "
                                             "try again.")
        return None

    async def _post(self, request: Request, editing: str | None) -> Response:
        form = await request.form()
        draft = draft_from_form(form)
        action = form.get("action")
        if action == "add_skill":
            return await self._add_skill(request, draft, editing)
        if action in LOOKS:
            shown = await self._look(draft, editing, action == "try")
            return self._form(request, draft, editing, errors=shown.get("errors"), looked=shown)
        return await self._save(request, draft, editing)

    # -- preview and try it (nothing written) ----------------------------------------------------

    async def preview(self, request: Request) -> Response:
        """The builder's preview (``action=preview``) or "Try it" (``action=try``) of the form's
        unsaved agent, as an HTML fragment the page puts in place (``builder.js``)."""
        form = await request.form()
        refused = self._refused_look(request, form)
        if refused is not None:
            return refused
        editing = form.get("editing")
        shown = await self._look(draft_from_form(form), editing if isinstance(editing, str) and editing else None,
                                 form.get("action") == "try")
        return HTMLResponse(self.pages.env.get_template("agent_preview.html").render(looked=shown))

    async def _look(self, draft: AgentDraft, editing: str | None, trying: bool) -> dict[str, Any]:
        """What the preview shows: the form's errors, or the core's resolution of the unsaved file
        with the sample values (``prompts/get``'s messages; for "Try it" also ``agent_inject``'s)."""
        path, previous = self._target(draft, editing)
        errors = check_draft(draft, {s.name for s in self.harness.skills()}, self._tool_names(), path)
        shown: dict[str, Any] = {"trying": trying, "samples": draft.samples()}
        if errors:
            return shown | {"errors": errors}
        try:
            found = await self.harness.preview_agent_file(agent_text(draft, previous), path, draft.samples())
        except HarnessError as exc:
            return shown | {"problem": error_message(exc)}
        return shown | {"preview": found, "prompt_get": _joined(found), "structured": render_json(found.structured)}

    def _target(self, draft: AgentDraft, editing: str | None) -> tuple[Path, dict[str, Any]]:
        """Where the form's agent is (or will be) written, and its file's front matter now."""
        if editing is not None and (current := self.harness.agent_file(editing)) is not None:
            return current.path, current.parts()[0]
        folder = self.harness.agent_folder() or self.harness.config.base_dir
        return folder / f"{draft.name or 'agent'}.md", {}

    def _tool_names(self) -> list[str]:
        """The tools an agent may name: those the server offers, and the Lua tools set aside."""
        listing = self.harness.tool_listing()
        return [t["name"] for t in listing["tools"]] + [u["name"] for u in listing.get("unavailable", [])]

    async def _save(self, request: Request, draft: AgentDraft, editing: str | None) -> Response:
        """Check the form, write the file when it is still the version the form was opened on."""
        known = {s.name for s in self.harness.skills()}
        if editing is not None:
            current = self.harness.agent_file(editing)
            if current is None:
                return self._not_editable(request, editing)
            path, previous = current.path, current.parts()[0]
        else:
            folder = self.harness.agent_folder()
            if folder is None:
                return self.pages.render(request, "message.html", 400, title="No agents folder",
                                         message="No folder for agent files is configured: set [agents] paths "
                                                 "in the config file.")
            path, previous = folder / f"{draft.name}.md", {}
        errors = check_draft(draft, known, self._tool_names(), path)
        if editing is not None and draft.name != editing and "name" not in errors:
            errors["name"] = f"renaming is not supported here: keep {editing!r}, or create a new agent"
        if editing is None and "name" not in errors and self._taken(draft.name):
            errors["name"] = f"an agent named {draft.name!r} exists already: choose another name or edit that one"
        if errors:
            return self._form(request, draft, editing, errors=errors, status=400)
        text, problem = checked_text(draft, path, previous)
        if problem is not None:
            return self._form(request, draft, editing, errors={"form": problem}, status=400)
        try:
            conflict = await self.harness.write_agent_file(path, text, draft.version if editing is not None else None)
        except HarnessError as exc:
            return self._form(request, draft, editing, errors={"name": error_message(exc)}, status=400)
        if conflict is not None:
            yours, draft.version = text, conflict.version
            return self._form(request, draft, editing, status=409, conflict={"disk": conflict.text, "yours": yours})
        return RedirectResponse(f"/ui/agents/{_quote(draft.name)}/edit?saved=1", status_code=303)

    def _taken(self, name: str) -> bool:
        return any(a.name == name for a in self.harness.agents()) or any(
            u.name == name for u in self.harness.unavailable_agents())

    async def _add_skill(self, request: Request, draft: AgentDraft, editing: str | None) -> Response:
        """Write the new skill's ``SKILL.md``, then show the form again with the skill used and enabled."""
        fields = draft.new_skill
        name = fields["new_skill_name"].strip()
        problem = skill_errors(name, {s.name for s in self.harness.skills()}, self.harness.skill_folder())
        folder = self.harness.skill_folder()
        if problem is None and folder is not None:
            text = skill_text(name, fields["new_skill_description"], fields["new_skill_category"],
                              fields["new_skill_instructions"])
            try:
                parse_skill(text, folder / name / SKILL_FILE)  # what the loader will read
                path = await self.harness.write_skill(name, text)
            except (ConfigError, HarnessError) as exc:
                problem = error_message(exc)
        if problem is not None:
            field = "new_skill_name" if folder is not None else "form"
            return self._form(request, draft, editing, errors={field: problem}, status=400)
        draft.used.append(name)
        draft.new_skill = dict.fromkeys(fields, "")
        return self._form(request, draft, editing, added=f"skill {name!r} written to {self._shown(path)}")

    def _form(self, request: Request, draft: AgentDraft, editing: str | None, *, errors: dict[str, str] | None = None,
              status: int = 200, **extra: Any) -> Response:
        action = f"/ui/agents/{_quote(editing)}/edit" if editing is not None else "/ui/new-agent"
        listing = self.harness.tool_listing()
        offered = [(t["name"], _first_sentence(t.get("description") or "")) for t in listing["tools"]]
        offered += [(u["name"], f"set aside: {u['message']}") for u in listing.get("unavailable", [])]
        names = {name for name, _ in offered}
        chosen = draft.tool_names()
        return self.pages.render(request, "agent_form.html", status, draft=draft, editing=editing, action=action,
                                 errors=errors or {}, categories=_by_category(self.harness.skills()),
                                 skill_folder=self._shown(self.harness.skill_folder()), offered=offered,
                                 chosen=set(chosen), other_tools=", ".join(t for t in chosen if t not in names),
                                 claude_tools=", ".join(sorted(CLAUDE_CODE_TOOLS)), blank_row=ArgumentRow(),
                                 **extra)

    def _shown(self, path: Path | None) -> str | None:
        """``path`` relative to the config file's folder when inside it (pages never need more)."""
        if path is None:
            return None
        try:
            return path.relative_to(self.harness.config.base_dir.resolve()).as_posix()
        except ValueError:
            return str(path)

    # -- try it ----------------------------------------------------------------------------------

    async def try_it(self, request: Request) -> Response:
        """The agent's argument form; with ``run=1``, its prompt as ``prompts/get`` and
        ``agent_zoo_inject`` (compiled, structured) return it, resolved with the arguments given."""
        if not self.pages.sessions.logged_in(request):
            return self.pages.login_redirect(request)
        name = request.path_params["name"]
        info = next((a for a in self.harness.agents() if a.name == name), None)
        if info is None:
            return self.pages.render(request, "message.html", 404, title="No such agent",
                                     message=f"unknown agent {name!r}; the Agents page lists them")
        values = {arg.name: request.query_params.get(arg.name, "") for arg in info.arguments}
        try:
            fixed = choices(self.harness.read_agent_resource(f"agent://{name}"))
        except (HarnessError, NotFound):
            fixed = {}
        context: dict[str, Any] = {"agent": info, "values": values, "where": WHERE, "choices": fixed,
                                   "editable": info.source == "markdown"}
        if request.query_params.get("run") == "1":
            given = {key: value for key, value in values.items() if value != ""}
            try:
                context.update(await self._resolved(name, given))
            except (HarnessError, NotFound) as exc:
                context["error"] = getattr(exc, "message", None) or error_message(exc)
        return self.pages.render(request, "agent.html", **context)

    async def _resolved(self, name: str, given: dict[str, str]) -> dict[str, Any]:
        resolution = await self.harness.resolve_agent(name, given)
        prompt = resolution.prompt
        messages = prompt_get_messages(name, prompt.system, prompt.messages)
        prompt_get = messages[0][1] if len(messages) == 1 else "\n\n".join(
            f"[{role}]\n{text}" for role, text in messages)
        compiled = await self.harness.zoo_inject(name, given, "compiled")
        return {"prompt": prompt, "prompt_get": prompt_get, "compiled": render_json(compiled), "resolution": resolution,
                "messages": messages,
                "compiled_prompt": compiled.get("prompt", ""),
                "structured": render_json(await self.harness.zoo_inject(name, given, "structured"))}


def _by_category(skills: list[Skill]) -> list[tuple[str, list[Skill]]]:
    """Skills grouped by category (sorted; "Uncategorised" last), each group sorted by name."""
    groups: dict[str, list[Skill]] = {}
    for skill in skills:
        groups.setdefault(skill.category, []).append(skill)
    order = sorted(groups, key=lambda c: (c == "", c.lower()))
    return [(c or UNCATEGORISED, sorted(groups[c], key=lambda s: s.name)) for c in order]


def _joined(preview: AgentPreview) -> str:
    """``prompts/get``'s messages as "Try it" shows them: one message as it is, several with their roles."""
    if len(preview.messages) == 1:
        return preview.messages[0][1]
    return "\n\n".join(f"[{role}]\n{text}" for role, text in preview.messages)


def _first_sentence(text: str) -> str:
    head = text.strip().split("\n", 1)[0]
    cut = head.find(". ")
    return head if cut < 0 else head[: cut + 1]


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


__all__ = ["AgentPages"]
