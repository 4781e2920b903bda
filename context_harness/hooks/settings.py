"""What ``ctx hook`` needs of the config, read fast: ``[hooks]``, where the workspace lives, and the keyword
index's settings. ``ctx hook session-start`` must answer within 300 ms, and importing the validated
``Config`` alone takes about half of that, so a plain config file (the usual case: ``ctx hook install``
writes ``--config FILE`` into the client's command) is read here with ``tomllib`` and nothing else.

The quick read never disagrees with the validated one: anything it does not read exactly as
``config`` would (a ``${VAR}`` in a key it reads, a value of an unexpected type or out of range, an
unknown ``[hooks]`` key, PostgreSQL) makes it answer None, and the caller loads the validated
``Config`` instead (``from_config``), which also gives the error message a broken file deserves.
``tests/hooks`` checks that both reads agree on the defaults.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from context_harness.config import Config

LANGUAGE_KINDS = ("filesystem", "git", "s3", "script")  # ConnectorsConfig.languages(): the built-in types


@dataclass(frozen=True)
class HookSettings:
    """``[hooks]`` and what the digest opens: the SQLite file and the keyword index's settings."""

    db_path: Path
    budget_tokens: int = 2000
    inbox: str | None = None
    folder: str = "sessions"
    pinned_tag: str = "pinned"
    recent_days: int = 7
    model: str | None = None
    title_boost: float = 0.25
    heading_boost: float = 0.0
    languages: dict[str, str] = field(default_factory=dict)
    postgres: bool = False


# key: (type, lowest, highest) as config/hooks.py validates it
_HOOK_KEYS: dict[str, tuple[type, int | None, int | None]] = {
    "budget_tokens": (int, 100, 100_000), "inbox": (str, None, None), "folder": (str, 1, None),
    "pinned_tag": (str, 1, None), "recent_days": (int, 1, 3650), "model": (str, 1, None),
}


def quick(path: Path) -> HookSettings | None:
    """The settings of the config file at ``path`` read without validation, or None when only the
    validated ``Config`` can say (see the module docstring)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    db, hooks, retrieval = raw.get("db", {}), raw.get("hooks", {}), raw.get("retrieval", {})
    if not all(isinstance(t, dict) for t in (db, hooks, retrieval)) or _has_variable((db, hooks)):
        return None
    if db.get("backend", "embedded") != "embedded" or not isinstance(db.get("path", ""), str):
        return None
    values: dict[str, Any] = {}
    for key, value in hooks.items():
        if key not in _HOOK_KEYS or not _fits(value, *_HOOK_KEYS[key]):
            return None
        values[key] = value
    inbox = values.get("inbox")
    if inbox is not None and not (inbox.startswith("filesystem:") and len(inbox.split()) == 1 and inbox[11:]):
        return None
    boosts: dict[str, Any] = {k: retrieval.get(k) for k in ("title_boost", "heading_boost") if k in retrieval}
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in boosts.values()):
        return None
    languages = _languages(raw.get("connectors", {}))
    if languages is None:
        return None
    db_path = Path(db.get("path", "data/ctx.sqlite")).expanduser()
    db_path = db_path if db_path.is_absolute() else (path.resolve().parent / db_path).resolve()
    values.update({k: float(v) for k, v in boosts.items()})
    return HookSettings(db_path=db_path, languages=languages, **values)


def from_config(config: Config) -> HookSettings:
    """The settings of a validated ``Config``."""
    hooks = config.hooks
    return HookSettings(db_path=config.db.path, budget_tokens=hooks.budget_tokens, inbox=hooks.inbox,
                        folder=hooks.folder, pinned_tag=hooks.pinned_tag, recent_days=hooks.recent_days,
                        model=hooks.model,
                        title_boost=config.retrieval.title_boost, heading_boost=config.retrieval.heading_boost,
                        languages=config.connectors.languages(), postgres=config.db.backend == "postgres")


def _fits(value: Any, kind: type, low: int | None, high: int | None) -> bool:
    if not isinstance(value, kind) or isinstance(value, bool):
        return False
    size: int = value if isinstance(value, int) else len(str(value))
    return (low is None or size >= low) and (high is None or size <= high)


def _has_variable(tables: tuple[dict[str, Any], ...]) -> bool:
    return any(isinstance(v, str) and "${" in v for table in tables for v in table.values())


def _languages(connectors: Any) -> dict[str, str] | None:
    """``{source label: language}`` as ``ConnectorsConfig.languages`` gives it; None when unsure."""
    if not isinstance(connectors, dict):
        return None
    out: dict[str, str] = {}
    for kind in LANGUAGE_KINDS:
        entries = connectors.get(kind, {})
        if not isinstance(entries, dict):
            return None
        for name, table in entries.items():
            language = table.get("language", "auto") if isinstance(table, dict) else None
            if not isinstance(language, str) or "${" in language:
                return None
            code = language.strip().lower()
            if code != "auto":
                out[f"{kind}:{name}"] = code
    return out
