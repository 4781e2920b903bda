"""How to add an extra (``documents``, ``postgres``, ``s3``) to the install that is running: a command
that works in the user's situation, not the PyPI name of a package that is not published.

The situation is read from the install itself: a uv tool or pipx environment (``sys.prefix``), and
where the package came from (PEP 610 ``direct_url.json``: a checkout, possibly editable, or a git
URL; none means an index, where the published name works)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

DISTRIBUTION = "context-harness"


def _direct_url() -> dict[str, Any]:
    from importlib import metadata

    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return {}
    try:
        found = json.loads(text or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def requirement(extra: str, origin: dict[str, Any] | None = None) -> tuple[str, bool]:
    """``(what to install, editable)`` for the package with ``extra``, from where it came from."""
    origin = _direct_url() if origin is None else origin
    url = str(origin.get("url") or "")
    vcs = origin.get("vcs_info")
    if isinstance(vcs, dict) and url:
        ref = vcs.get("requested_revision")
        return f"{DISTRIBUTION}[{extra}] @ {vcs.get('vcs', 'git')}+{url}{'@' + ref if ref else ''}", False
    if url.startswith("file://"):
        from urllib.parse import unquote, urlparse

        local = Path(unquote(urlparse(url).path))  # a checkout (maybe editable) or a wheel file
        editable = bool((origin.get("dir_info") or {}).get("editable"))
        if local.exists():
            return f"{local.as_posix()}[{extra}]", editable
    return f"{DISTRIBUTION}[{extra}]", False


def install_hint(extra: str, prefix: str | None = None, origin: dict[str, Any] | None = None) -> str:
    """The command that adds ``extra`` to this install (uv tool, pipx or the running Python's pip)."""
    spec, editable = requirement(extra, origin)
    where = (prefix if prefix is not None else sys.prefix).replace("\\", "/")
    if "/uv/tools/" in where:
        return f"uv tool install --force {shlex.quote(spec)}"
    if "/pipx/venvs/" in where:
        return f"pipx install --force {shlex.quote(spec)}"
    python = shlex.quote(sys.executable)
    return f"{python} -m pip install {'-e ' if editable else ''}{shlex.quote(spec)}"


class InstallHint:
    """``install_hint(extra)`` as text, worked out when first shown (formatting it in an f-string or
    a log call), so importing a module that names one costs nothing."""

    def __init__(self, extra: str) -> None:
        self.extra = extra
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            self._text = install_hint(self.extra)
        return self._text

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return f"InstallHint({self.extra!r})"
