"""Which project a session works on: the git repository holding its working folder (found by walking up
to a ``.git``, no ``git`` process), else the working folder itself. Its slug names the folder of the
project's session notes and its ``project:SLUG`` tag."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_UNSAFE = re.compile(r"[^a-z0-9._-]+")


@dataclass(frozen=True)
class Project:
    folder: Path  # the session's working folder
    repository: str | None  # the git repository's folder name, when the folder is inside one
    slug: str  # lowercase letters, digits, ".", "_" and "-"

    @property
    def name(self) -> str:
        return self.repository or self.folder.name or "root"

    @property
    def tag(self) -> str:
        return f"project:{self.slug}"

    def words(self) -> str:
        """The project's names as a keyword query: the repository's and the folder's, split into words."""
        names = dict.fromkeys([self.name, self.folder.name])
        return " ".join(w for n in names for w in re.split(r"[\W_]+", n) if w)


def slug(text: str) -> str:
    """``text`` as a safe file name part: lowercase, runs of other characters as one ``-``."""
    return _UNSAFE.sub("-", text.lower()).strip("-.") or "root"


def project_of(cwd: str | None) -> Project:
    """The project of a session whose working folder is ``cwd`` (the current folder when not given)."""
    folder = Path(cwd) if cwd else Path.cwd()
    folder = folder if folder.is_absolute() else Path.cwd() / folder
    repository = None
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            repository = candidate.name or None
            break
    name = repository or folder.name or "root"
    return Project(folder=folder, repository=repository, slug=slug(name))
