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
    on_path = _on_path("context-harness")
    if on_path:
        return [on_path], "on PATH"
    return [os.path.abspath(sys.executable), "-m", "context_harness"], "the running Python (no context-harness script)"


def _on_path(name: str) -> str | None:
    """``name`` on ``PATH``, its folders that are absolute only (a relative one, such as ``.``, would
    find a file of whatever folder the command runs in: a cloned repository's)."""
    folders = [f for f in os.environ.get("PATH", "").split(os.pathsep) if f and os.path.isabs(f)]
    found = shutil.which(name, path=os.pathsep.join(folders)) if folders else None
    return os.path.abspath(found) if found else None


# -- is an entry this installation's server? --------------------------------------------------------
# Variables with which an entry's "env" makes a program load or run other code: the dynamic loader's,
# Python's (PYTHONPATH, PYTHONHOME, PYTHONSTARTUP ...), git's (the git connector runs git: GIT_SSH_COMMAND,
# GIT_CONFIG_*, GIT_EXEC_PATH ...), and those that move where programs are found or configured.
CODE_VARIABLES = frozenset({"PATH", "HOME", "XDG_CONFIG_HOME", "BASH_ENV", "ENV", "GCONV_PATH", "OPENSSL_CONF",
                            "OPENSSL_MODULES", "OPENSSL_ENGINES", "SSH_ASKPASS", "EDITOR", "VISUAL", "PAGER",
                            "BROWSER", "PERL5OPT", "PERL5LIB", "RUBYOPT", "CTX_CONFIG"})
CODE_PREFIXES = ("LD_", "DYLD_", "PYTHON", "GIT_", "LUA_")
SERVER_ARGS = "--config FILE, --root DIR, -v, serve [--agent NAME]"  # what an entry of ours may pass


def own_commands() -> dict[str, str]:
    """The real paths of this installation's ``context-harness`` and ``ctx`` scripts (beside the running
    Python, and the one ``ctx setup`` would write), each mapped to the path to show."""
    here = Path(os.path.abspath(sys.executable)).parent
    found = [here / name for name in ("context-harness", "ctx", "context-harness.exe", "ctx.exe")]
    command, _ = server_executable()
    mine = {os.path.realpath(p): str(p) for p in found if p.is_file()}
    if len(command) == 1:
        mine.setdefault(os.path.realpath(command[0]), command[0])
    return mine


def foreign_server(resolved: str, args: list[str], env: dict[str, str], folder: str) -> str | None:
    """Why the entry that starts ``resolved`` (the program's path as the client finds it) with ``args``,
    the entry's own ``env`` added, in ``folder``, is not this installation's server as it stands; None
    when it is. Ours: one of ``own_commands()``, or this very Python with ``-m context_harness`` in a
    folder with nothing it could import first; only the arguments ``ctx setup`` writes; no variable of
    ``CODE_VARIABLES``/``CODE_PREFIXES``."""
    mine = own_commands()
    python = os.path.normpath(os.path.abspath(sys.executable))
    if os.path.realpath(resolved) in mine:
        rest = args
    elif os.path.normpath(resolved) == python and args[:2] == ["-m", "context_harness"]:
        rest = args[2:]
        shadow = _importable(Path(folder))
        if shadow:
            return (f"`python -m context_harness` imports from the folder it runs in ({folder}) first, and that "
                    f"folder holds {shadow!r}")
    else:
        ours = ", ".join([*mine.values(), f"{python} -m context_harness"])
        return f"{resolved!r} is not this installation's server ({ours})"
    loaders = sorted(k for k in env if k.upper() in CODE_VARIABLES or k.upper().startswith(CODE_PREFIXES))
    if loaders:
        shown = ", ".join(f"{k}={env[k]!r}" for k in loaders)
        return f"it sets {shown}, with which a program can load other code"
    return _args_problem(rest)


def _args_problem(args: list[str]) -> str | None:
    """Why ``args`` are not the server's own (``SERVER_ARGS``), or None."""
    served, i = False, 0
    while i < len(args):
        arg = args[i]
        name, equals, _ = arg.partition("=")
        if arg in ("-v", "--verbose") or (arg == "serve" and not served):
            served = served or arg == "serve"
            i += 1
        elif name in ("--config", "--root") or (served and name == "--agent"):
            if not equals and i + 1 >= len(args):
                return f"its arguments end with {arg!r} and no value"
            i += 1 if equals else 2
        else:
            return f"its arguments include {arg!r}, which the server ctx setup writes does not take ({SERVER_ARGS})"
    return None


def _importable(folder: Path) -> str | None:
    """A name in ``folder`` that Python could import (a module or a folder), or None."""
    from importlib.machinery import all_suffixes

    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for name in names:
        stem = next((name[:-len(s)] for s in all_suffixes() if name.endswith(s)), None)
        if (stem or name).isidentifier() and (stem is not None or (folder / name).is_dir()):
            return name
    return None


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
