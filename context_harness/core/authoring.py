"""``Authoring``: the Harness's calls for writing agents and skills as files (the web console's agent
editor), and AgentZoo's ``agent_zoo_inject`` for any agent whether or not ``compat`` offers the tool.

New Markdown agents go into the first ``[agents] paths`` folder that exists (else the first one),
new skills into the first ``skill_paths`` folder likewise. A file is written atomically (a temp file
beside it, fsynced, renamed: ``notes.atomic``), and only when it still holds the version the writer
read; then the agents are re-read at once, so ``prompts/list`` shows the change without waiting for
the serving reload loop (which announces it to MCP clients as usual).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any

from context_harness.agents.settings import load_settings
from context_harness.agents.skills import SKILL_FILE, Skill
from context_harness.errors import NotConfigured
from context_harness.formats.markdown import split_front_matter
from context_harness.notes.atomic import write_atomic
from context_harness.tools.agentzoo import zoo_tools

if TYPE_CHECKING:
    from collections.abc import Callable

    from context_harness.config import Config
    from context_harness.core.catalog import Catalog

_WRITE_LOCK = threading.Lock()  # a version check and its write happen together


@dataclass(frozen=True)
class AgentFile:
    """A Markdown agent file as read: its text and version (the SHA-256 of its bytes)."""

    path: Path
    text: str
    version: str

    def parts(self) -> tuple[dict[str, Any], str]:
        """(front matter, body), as the loader splits them."""
        return split_front_matter(self.text)


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
        return _first(load_settings(self.config).agent_paths)

    def skill_folder(self) -> Path | None:
        """Where a new skill is written, or None when no ``[agents] skill_paths`` folder is configured."""
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
        now when it changed since ``version`` (nothing written). Re-reads the agents after a write."""

        def write() -> AgentFile | None:
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

    async def write_skill(self, name: str, text: str) -> Path:
        """Write a new skill ``<skill folder>/<name>/SKILL.md`` (``BadRequest`` if it exists) and re-read
        the skills. ``name`` must already match ``SKILL_NAME``."""
        folder = self.skill_folder()
        if folder is None:
            raise NotConfigured("no skill folder is configured: set [agents] skill_paths in the config file")
        path = folder / name / SKILL_FILE
        await self.run_blocking(write_atomic, path, text.encode("utf-8"), overwrite=False)
        await self.catalog.reload()
        return path

    async def zoo_inject(self, name: str, arguments: dict[str, Any], format: str) -> dict[str, Any]:
        """What ``agent_zoo_inject`` returns for agent ``name`` (its own code, offered or not)."""
        catalog = self.catalog
        [inject] = [t for t in zoo_tools(catalog.agent_library, catalog.compile_agent) if t.name == "agent_zoo_inject"]
        return await inject.call({"agentId": name, "format": format, "arguments": arguments})


def _first(folders: list[Path]) -> Path | None:
    return next((f for f in folders if f.is_dir()), folders[0] if folders else None)


__all__ = ["AgentFile", "Authoring", "read_agent_file", "version_of"]
