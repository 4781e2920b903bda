"""The MCP clients ``ctx setup`` configures: where each keeps its config file on Linux, macOS and
Windows, the entry it expects for a stdio server, and a merge that changes only that entry.

Plain data and files, no click: ``plan`` reads the client's file and computes the new content,
``apply`` writes it (after a backup), ``Plan.diff`` says what changes. A file that is not a JSON
object is refused with a ``ConfigError`` and left as it is.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from context_harness.errors import ConfigError

PLATFORM_ENV = "CTX_SETUP_PLATFORM"  # linux, darwin or win32: whose file locations to use (tests, --print)
# Keys of an existing entry that describe how to reach the server: replaced, never merged. Any other key
# the user added to the entry (env, cwd, disabled ...) is kept.
TRANSPORT_KEYS = frozenset({"type", "command", "args", "url", "headers", "transport"})


@dataclass(frozen=True)
class Client:
    name: str  # as on the command line
    title: str
    servers_key: str  # the top-level object that maps server names to entries
    typed: bool  # whether an entry names its transport ("type": "stdio")
    project_file: str | None  # relative to the project folder; None: the client has no project scope


CLIENTS = {
    "claude-desktop": Client("claude-desktop", "Claude Desktop", "mcpServers", False, None),
    "claude-code": Client("claude-code", "Claude Code", "mcpServers", True, ".mcp.json"),
    "cursor": Client("cursor", "Cursor", "mcpServers", False, ".cursor/mcp.json"),
    "vscode": Client("vscode", "VS Code", "servers", True, ".vscode/mcp.json"),
}


def current_platform() -> str:
    """``linux``, ``darwin`` or ``win32``: ``$CTX_SETUP_PLATFORM`` if set, else this machine's
    (any other Unix counts as Linux: the same XDG locations)."""
    name = os.environ.get(PLATFORM_ENV) or sys.platform
    if name not in ("linux", "darwin", "win32"):
        return "linux"
    return name


def _app_data(platform: str) -> Path:
    """Where desktop apps (Electron: Claude Desktop, VS Code) keep their per-user folders."""
    home = Path.home()
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def config_file(client: Client, scope: str, platform: str, project: Path) -> Path:
    """The file ``client`` reads its MCP servers from: the user's (``scope="user"``) or the
    project's (``scope="project"``, relative to ``project``)."""
    if scope == "project":
        if client.project_file is None:
            raise ValueError(f"{client.title} has no project scope")
        return project / client.project_file
    home = Path.home()
    if client.name == "claude-desktop":
        return _app_data(platform) / "Claude" / "claude_desktop_config.json"
    if client.name == "claude-code":  # CLAUDE_CONFIG_DIR moves Claude Code's whole configuration
        return Path(os.environ.get("CLAUDE_CONFIG_DIR") or home) / ".claude.json"
    if client.name == "cursor":
        return home / ".cursor" / "mcp.json"
    return _app_data(platform) / "Code" / "User" / "mcp.json"


# -- the server command ---------------------------------------------------------------------------

def server_executable() -> tuple[list[str], str]:
    """The command that starts this install's server, and where it was found.

    The ``context-harness`` beside the running interpreter wins over the one on ``PATH``: it is the
    install running this command (same version, same extras), while ``PATH`` may find another one.
    Without either, the interpreter itself runs the package (``python -m context_harness``).
    Symlinks are kept as they are: a virtual environment's ``python`` is one."""
    name = "context-harness.exe" if sys.platform == "win32" else "context-harness"
    beside = Path(os.path.abspath(sys.executable)).parent / name
    if beside.is_file():
        return [str(beside)], "beside the running Python"
    on_path = shutil.which("context-harness")
    if on_path:
        return [os.path.abspath(on_path)], "on PATH"
    return [os.path.abspath(sys.executable), "-m", "context_harness"], "the running Python (no context-harness script)"


def temporary_install(command: list[str]) -> bool:
    """Whether the command lives in uv's cache (``uvx --from ...``), which uv may clean at any time."""
    parts = Path(command[0]).parts
    return any(part in ("archive-v0", "builds-v0") for part in parts)


def server_entry(client: Client, command: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio"} if client.typed else {}
    return {**entry, "command": command[0], "args": command[1:]}


# -- reading, merging, writing --------------------------------------------------------------------

def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@dataclass
class Plan:
    """What ``ctx setup`` would do to one file: ``before`` is None when the file does not exist."""

    path: Path
    before: dict[str, Any] | None
    after: dict[str, Any]

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the file's content, before and after (both as ``ctx setup`` writes JSON)."""
        import difflib

        old = dumps(self.before).splitlines() if self.before is not None else []
        lines = difflib.unified_diff(old, dumps(self.after).splitlines(), lineterm="", n=2,
                                     fromfile="/dev/null" if self.before is None else str(self.path),
                                     tofile=str(self.path))
        return "\n".join(lines)


def _refuse(path: Path, problem: str, client: Client) -> ConfigError:
    return ConfigError(f"{path} {problem}. `ctx setup` changed nothing: fix the file (or move it away) and run "
                       f"it again, or add the entry by hand (`ctx setup {client.name} --print` shows it)")


def _kind(value: Any) -> str:
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), "object")


def read_object(path: Path, client: Client) -> dict[str, Any] | None:
    """The file's JSON object; None when there is no file, ``{}`` when it is empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise _refuse(path, "is not UTF-8 text", client) from None
    except OSError as exc:
        raise ConfigError(f"{exc.filename or path}: cannot be read ({exc.strerror})") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = (" (VS Code accepts comments and trailing commas there; `ctx setup` cannot keep them)"
                if client.name == "vscode" else "")
        raise _refuse(path, f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}{hint}",
                      client) from None
    if not isinstance(data, dict):
        raise _refuse(path, f"holds a JSON {_kind(data)}, not an object", client)
    return data


def plan(client: Client, path: Path, name: str, entry: dict[str, Any]) -> Plan:
    """The file with server ``name`` set to ``entry``; every other key and server kept as it is."""
    before = read_object(path, client)
    after = copy.deepcopy(before) if before is not None else {}
    servers = after.setdefault(client.servers_key, {})
    if not isinstance(servers, dict):
        raise _refuse(path, f'has "{client.servers_key}" set to a JSON {_kind(servers)}, not an object of '
                      "servers", client)
    current = servers.get(name)
    kept = {k: v for k, v in current.items() if k not in TRANSPORT_KEYS} if isinstance(current, dict) else {}
    servers[name] = {**entry, **kept}
    return Plan(path, before, after)


def backup_name(path: Path) -> Path:
    """``NAME.bak-YYYYMMDDTHHMMSSZ`` beside the file, never an existing one."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{n}")
    return candidate


def apply(plan: Plan) -> Path | None:
    """Write the plan's content: back up the existing file first, then replace it atomically
    (a symlinked file is written through the link). Returns the backup's path, if one was made."""
    target = plan.path.resolve() if plan.path.is_symlink() else plan.path
    backup = None
    temporary = target.with_name(f".{target.name}.ctx-setup.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            backup = backup_name(plan.path)
            shutil.copy2(target, backup)
        temporary.write_text(dumps(plan.after), encoding="utf-8")
        if target.exists():
            shutil.copymode(target, temporary)
        os.replace(temporary, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise ConfigError(f"{exc.filename or target}: cannot be written ({exc.strerror})") from None
    return backup
