"""``Authoring``: the Harness's calls for writing agents and skills as files (the web console's agent
editor), and AgentZoo's ``agent_zoo_inject`` for any agent whether or not ``compat`` offers the tool.

New Markdown agents go into the first ``[agents] paths`` folder that exists (else the first one),
new skills into the first ``skill_paths`` folder likewise. A file is written atomically (a temp file
beside it, fsynced, renamed: ``notes.atomic``), and only when it still holds the version the writer
read; then the agents are re-read at once, so ``prompts/list`` shows the change without waiting for
the serving reload loop (which announces it to MCP clients as usual). A file naming a tool this
server does not offer is refused (``agents.editing.unknown_tools``: Claude Code's own tools aside).

``preview_agent_file`` resolves an agent file's text before it is written, as ``prompts/get`` and
``agent_inject`` will once it is (the console's live preview and its "Try it" of an unsaved agent).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from context_harness.errors import BadRequest, ConfigError, NotConfigured

if TYPE_CHECKING:  # agents, tools and formats are imported by the calls that use them: a knowledge base opened
    # to search imports none of them (issue 50)
    from collections.abc import Callable

    from context_harness.agents.skills import Skill
    from context_harness.config import Config
    from context_harness.core.catalog import Catalog
    from context_harness.core.context import BlockingKnowledgeBase

_WRITE_LOCK = threading.Lock()  # a version check and its write happen together


@dataclass(frozen=True)
class AgentFile:
    """A Markdown agent file as read: its text and version (the SHA-256 of its bytes)."""

    path: Path
    text: str
    version: str

    def parts(self) -> tuple[dict[str, Any], str]:
        """(front matter, body), as the loader splits them."""
        from context_harness.formats.markdown import split_front_matter

        return split_front_matter(self.text)


@dataclass(frozen=True)
class AgentPreview:
    """An agent file's text resolved before it is saved: what MCP clients will get once it is."""

    name: str
    system: str  # the system prompt with its active skills
    tools: list[str]
    messages: list[tuple[str, str]]  # (role, text), as ``prompts/get`` sends them
    compiled: str  # ``agent_inject`` with format "compiled"
    structured: dict[str, Any]  # ``agent_inject`` with format "structured"
    ms: float
    searches: int
    fetches: int


def version_of(data: bytes) -> str:
    return sha256(data).hexdigest()


def read_agent_file(path: Path) -> AgentFile:
    data = path.read_bytes()
    return AgentFile(path, data.decode("utf-8", errors="replace"), version_of(data))


class Authoring:
    """Mixed into ``Harness`` (which provides ``config``, ``catalog`` and ``run_blocking``)."""

    if TYPE_CHECKING:
        config: Config

        @property
        def catalog(self) -> Catalog: ...

        async def run_blocking(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...

    def agent_folder(self) -> Path | None:
        """Where a new Markdown agent is written, or None when no ``[agents] paths`` folder is configured."""
        from context_harness.agents.settings import load_settings

        return _first(load_settings(self.config).agent_paths)

    def skill_folder(self) -> Path | None:
        """Where a new skill is written, or None when no ``[agents] skill_paths`` folder is configured."""
        from context_harness.agents.settings import load_settings

        return _first(load_settings(self.config).skill_paths)

    def skills(self) -> list[Skill]:
        """Every skill loaded, sorted by name (with its category and file)."""
        return self.catalog.agent_library.skills()

    def agent_origins(self) -> dict[str, str]:
        """Where each agent is defined, as its messages name it (``[agents.NAME] in ctx.toml``, a script ...)."""
        library = self.catalog.agent_library
        return {name: spec.origin for name in library.names() if (spec := library.find_spec(name)) is not None}

    def agent_file(self, name: str) -> AgentFile | None:
        """The Markdown file agent ``name`` was loaded from, or None (another format, or no such agent)."""
        spec = self.catalog.agent_library.find_spec(name)
        if spec is None or spec.source != "markdown" or not spec.files:
            return None
        return read_agent_file(spec.files[0])

    async def write_agent_file(self, path: Path, text: str, version: str | None) -> AgentFile | None:
        """Write ``text`` to ``path`` when the file still has ``version`` (None: a new file, which must
        not exist; ``BadRequest`` if it does). Returns None when written, or the file as it is on disk
        now when it changed since ``version`` (nothing written). Re-reads the agents after a write.
        ``BadRequest`` (nothing written) when the text names a tool this server does not offer."""
        self._check_tools(text, path)

        def write() -> AgentFile | None:
            from context_harness.notes.atomic import write_atomic

            with _WRITE_LOCK:
                if version is not None:
                    current = read_agent_file(path) if path.exists() else AgentFile(path, "", "")
                    if current.version != version:
                        return current
                write_atomic(path, text.encode("utf-8"), overwrite=version is not None)
                return None

        found: AgentFile | None = await self.run_blocking(write)
        if found is None:
            await self.catalog.reload()
        return found

    def _known_tools(self) -> list[str]:
        """The tools an agent may name: those offered, and the Lua tools set aside (unset variables)."""
        return [t.name for t in self.catalog.tools()] + [u.name for u in self.catalog.toolset.unavailable()]

    def _check_tools(self, text: str, path: Path) -> None:
        from context_harness.agents.editing import unknown_tools, unknown_tools_message
        from context_harness.agents.sources import parse_markdown_agent

        try:
            spec = parse_markdown_agent(text, path)
        except ConfigError as exc:
            raise BadRequest(exc.message) from None
        if spec is None:
            return
        known = self._known_tools()
        unknown = unknown_tools(spec.tools, known, path)
        if unknown:
            raise BadRequest(f"agent file {path.name}: {unknown_tools_message(unknown, known)}")

    async def preview_agent_file(self, text: str, path: Path, arguments: dict[str, Any]) -> AgentPreview:
        """Agent file ``text`` (not written; as if at ``path``) resolved with ``arguments``, as
        ``prompts/get`` and ``agent_inject`` will return it once saved. ``BadRequest`` for a text the
        loader refuses, a skill that is not loaded or arguments the agent refuses."""
        from context_harness.agents.models import SkillOut, StructuredAgent, dump
        from context_harness.agents.render import compiled_text, prompt_get_messages, with_skills
        from context_harness.agents.sources import parse_markdown_agent
        from context_harness.core.context import HarnessContext

        skills = {s.name: s for s in self.skills()}
        context = HarnessContext(cast("BlockingKnowledgeBase", self))

        def resolve() -> AgentPreview:
            try:
                spec = parse_markdown_agent(text, path)
            except ConfigError as exc:
                raise BadRequest(exc.message.replace(f"agent file {path}: ", "")) from None
            if spec is None:
                raise BadRequest("the text has no front matter, so it defines no agent")
            missing = [s for s in spec.skills if s not in skills]
            if missing:
                raise BadRequest(f"no such skill: {', '.join(missing)}")
            start = time.perf_counter()
            prompt = spec.resolver(spec.check_arguments(arguments), context)
            active = [SkillOut(**skills[s].as_dict()) for s in spec.enabled_skills()]
            system = with_skills(prompt.system, active)
            structured = StructuredAgent(name=spec.name, system=prompt.system, skills=active, tools=prompt.tools,
                                         messages=prompt.messages)
            return AgentPreview(name=spec.name, system=system, tools=list(prompt.tools),
                                messages=prompt_get_messages(spec.name, system, prompt.messages),
                                compiled=compiled_text(spec.name, prompt.system, active, prompt.messages),
                                structured=dump(structured), ms=(time.perf_counter() - start) * 1000,
                                searches=context.searches, fetches=context.fetches)

        preview: AgentPreview = await self.run_blocking(resolve)
        return preview

    async def write_skill(self, name: str, text: str) -> Path:
        """Write a new skill ``<skill folder>/<name>/SKILL.md`` (``BadRequest`` if it exists) and re-read
        the skills. ``name`` must already match ``SKILL_NAME``."""
        folder = self.skill_folder()
        if folder is None:
            raise NotConfigured("no skill folder is configured: set [agents] skill_paths in the config file")
        from context_harness.agents.skills import SKILL_FILE
        from context_harness.notes.atomic import write_atomic

        path = folder / name / SKILL_FILE
        await self.run_blocking(write_atomic, path, text.encode("utf-8"), overwrite=False)
        await self.catalog.reload()
        return path

    async def zoo_inject(self, name: str, arguments: dict[str, Any], format: str) -> dict[str, Any]:
        """What ``agent_zoo_inject`` returns for agent ``name`` (its own code, offered or not)."""
        from context_harness.tools.agentzoo import zoo_tools

        catalog = self.catalog
        [inject] = [t for t in zoo_tools(catalog.agent_library, catalog.compile_agent) if t.name == "agent_zoo_inject"]
        return await inject.call({"agentId": name, "format": format, "arguments": arguments})


def _first(folders: list[Path]) -> Path | None:
    return next((f for f in folders if f.is_dir()), folders[0] if folders else None)


__all__ = ["AgentFile", "AgentPreview", "Authoring", "read_agent_file", "version_of"]
