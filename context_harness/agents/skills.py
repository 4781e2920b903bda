"""Skills in the Agent Skills format: a folder holding ``SKILL.md`` whose front matter gives
``name``, ``description`` and optionally ``category`` (how the console groups skills) and whose body
is the instructions::

    skills/
      review-checklist/
        SKILL.md        ---\nname: review-checklist\ndescription: ...\ncategory: Review\n---\n<instructions>

A skill folder may hold other files (scripts, references); only ``SKILL.md`` is read. The folder
name is the skill's name when the front matter has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from context_harness.errors import ConfigError
from context_harness.formats import yamlsafe
from context_harness.formats.markdown import read_front_matter

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 1024 * 1024  # as an agent file (``sources.MAX_FILE_BYTES``)
SKILL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    instructions: str
    path: Path
    category: str = ""  # "" = uncategorised

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description, "instructions": self.instructions}


def skill_files(folder: Path) -> list[Path]:
    """``SKILL.md`` files of the skill folders in ``folder`` (and ``folder`` itself, if it is one)."""
    if not folder.is_dir():
        return []
    own = folder / SKILL_FILE
    if own.is_file():
        return [own]
    return sorted(p / SKILL_FILE for p in folder.iterdir() if p.is_dir() and (p / SKILL_FILE).is_file())


def load_skill(path: Path) -> Skill:
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_BYTES:
            raise ConfigError(f"skill {path}: {size:,} bytes; a skill file may hold at most {MAX_SKILL_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"skill {path}: cannot read ({exc.__class__.__name__})") from None
    return parse_skill(text, path)


def parse_skill(text: str, path: Path) -> Skill:
    """``load_skill`` of ``text`` as if read from ``path`` (the console checks a skill before writing it)."""
    meta, body, refused = read_front_matter(text)
    if refused:
        raise ConfigError(f"skill {path}: its front matter was not read ({refused})")
    name = meta.get("name", path.parent.name)
    if not isinstance(name, str) or not SKILL_NAME.match(name):
        raise ConfigError(f"skill {path}: name must match ^[A-Za-z0-9][A-Za-z0-9_.-]{{0,63}}$ (got {name!r})")
    description = meta.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"skill {path}: description must be a string")
    category = meta.get("category", "")
    if not isinstance(category, str):
        raise ConfigError(f"skill {path}: category must be a string (got {category!r})")
    return Skill(name, description.strip(), body.strip(), path, category.strip())


def skill_text(name: str, description: str, category: str, instructions: str) -> str:
    """A ``SKILL.md``: front matter (``category`` only when given), then the instructions."""
    meta = {"name": name, "description": description.strip()}
    if category.strip():
        meta["category"] = category.strip()
    front = yamlsafe.dump(meta)
    return f"---\n{front}---\n\n{instructions.strip()}\n"


def load_skills(folders: list[Path]) -> dict[str, Skill]:
    """Every skill under ``folders``; two skills with one name are a ``ConfigError`` naming both."""
    skills: dict[str, Skill] = {}
    for folder in folders:
        for path in skill_files(folder):
            skill = load_skill(path)
            other = skills.get(skill.name)
            if other is not None and other.path.resolve() != path.resolve():
                raise ConfigError(f"skill '{skill.name}' is defined twice: {other.path} and {path}")
            skills[skill.name] = skill
    return skills


__all__ = ["SKILL_FILE", "SKILL_NAME", "Skill", "load_skill", "load_skills", "parse_skill", "skill_files",
           "skill_text"]
