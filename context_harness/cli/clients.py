"""The merge ``ctx setup`` makes into an MCP client's config file (the clients, their files and formats
are in ``client_table``): it changes only the server's entry.

Plain data and files, no click: ``plan`` reads the client's file and computes the new content,
``apply`` writes it (after a backup; through a temporary file of its own, with the file's mode),
``Plan.diff`` says what changes. A JSON file is written back whole, as JSON; a file with comments
(VS Code's, Zed's, Gemini CLI's) or TOML (Codex's) is edited in place, every comment and other line kept
(``file_edit``). A file that is not an object (a table), that could not be written back (``NaN``,
``1e400``, a lone surrogate) or nests past ``CLIENT_FILE_DEPTH``, or a read-only file, is refused
with a ``ConfigError`` and left as it is. ``foreign_server`` tells ``ctx doctor``
whether a project file's entry is this installation's server.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import math
import os
import shutil
import stat
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The client table, re-exported: ``setup`` and ``doctor`` take it from here.
from context_harness.cli.client_table import CLIENTS as CLIENTS
from context_harness.cli.client_table import PLATFORM_ENV as PLATFORM_ENV
from context_harness.cli.client_table import Client as Client
from context_harness.cli.client_table import config_file as config_file
from context_harness.cli.client_table import current_platform as current_platform
from context_harness.errors import ConfigError

# Keys of an existing entry that describe how to reach the server: replaced, never merged. Any other key
# the user added to the entry (env, cwd, disabled ...) is kept. Besides the common ones: Gemini CLI's httpUrl,
# Windsurf's serverUrl, Cline's transportType, Codex's bearer token and headers.
TRANSPORT_KEYS = frozenset({"type", "command", "args", "url", "headers", "transport", "httpUrl", "serverUrl",
                            "transportType", "bearer_token_env_var", "http_headers", "env_http_headers"})


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
    """What ``ctx setup`` would do to one file: ``before`` is None when the file does not exist.
    ``text`` is the new content of a file edited in place (comments kept); None: ``dumps(after)``."""

    path: Path
    before: dict[str, Any] | None
    after: dict[str, Any]
    client: Client | None = None
    text: str | None = None
    old_text: str | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def content(self) -> str:
        """What ``apply`` writes."""
        return self.text if self.text is not None else dumps(self.after)

    def diff(self) -> str:
        """A unified diff of the file's content, before and after (as ``ctx setup`` writes it)."""
        import difflib

        if self.text is not None:
            old = (self.old_text or "").splitlines()
        else:
            old = dumps(self.before).splitlines() if self.before is not None else []
        lines = difflib.unified_diff(old, self.content().splitlines(), lineterm="", n=2,
                                     fromfile="/dev/null" if self.before is None else str(self.path),
                                     tofile=str(self.path))
        return "\n".join(lines)


def _refuse(path: Path, problem: str, client: Client) -> ConfigError:
    return ConfigError(f"{path} {problem}. `ctx setup` changed nothing: fix the file (or move it away) and run "
                       f"it again, or add the entry by hand (`ctx setup {client.name} --print` shows it)")


def _kind(value: Any) -> str:
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), "object")


CLIENT_FILE_DEPTH = 256  # how deeply a client file may nest; the deepest real one nests about 10 levels


class _NotKept(ValueError):
    """A value ``json`` reads but ``ctx setup`` could not write back as JSON."""


def _constant(name: str) -> Any:
    raise _NotKept(f"holds {name}, which is not JSON")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotKept(f"holds the number {text[:40]}, which is too large to keep (written back it would be "
                       "Infinity, which is not JSON)")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # past Python's limit of 4,300 digits
        raise _NotKept(f"holds a number of {len(text)} digits, which is too large to read") from None


def _read_text(path: Path, client: Client) -> str | None:
    """The file's text; None when there is no file."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise _refuse(path, "is not UTF-8 text", client) from None
    except OSError as exc:
        raise ConfigError(f"{exc.filename or path}: cannot be read ({exc.strerror})") from None


def _parse(text: str, path: Path, client: Client) -> dict[str, Any]:
    """``text`` as the client's format: JSON, JSON with comments, or TOML (see ``read_object``)."""
    from context_harness.cli.file_edit import EditError, read_jsonc, read_toml
    from context_harness.common import jsonlimits

    try:
        if client.format == "toml":
            return read_toml(text)
        if client.format == "jsonc":
            data = read_jsonc(text, parse_float=_float, parse_int=_int)[0]
        else:
            data = jsonlimits.loads(text, max_depth=CLIENT_FILE_DEPTH, parse_constant=_constant, parse_float=_float,
                                    parse_int=_int)
    except EditError as exc:
        kind = "TOML" if client.format == "toml" else "JSON (comments are fine)"
        problem = str(exc) if str(exc).startswith("is not") else f"is not valid {kind}: {exc}"
        raise _refuse(path, problem, client) from None
    except jsonlimits.TooDeep as exc:
        raise _refuse(path, f"is nested more than {exc.limit} levels deep (line {exc.lineno}, column {exc.colno}); "
                      "no client file needs that", client) from None
    except json.JSONDecodeError as exc:
        raise _refuse(path, f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", client) from None
    except _NotKept as exc:
        raise _refuse(path, str(exc), client) from None
    if not isinstance(data, dict):
        raise _refuse(path, f"holds a JSON {_kind(data)}, not an object", client)
    try:
        dumps(data).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _refuse(path, f"holds a lone surrogate (\\u{ord(exc.object[exc.start]):04x}), which UTF-8 cannot "
                      "hold", client) from None
    return data


def read_object(path: Path, client: Client) -> dict[str, Any] | None:
    """The file's object (JSON, JSON with comments or TOML, as the client writes it); None when there
    is no file, ``{}`` when it is empty. Refused (a ``ConfigError`` naming the file, which stays as it
    is): text that is not UTF-8 or not of the format, a JSON value that is not an object, nested deeper
    than ``CLIENT_FILE_DEPTH``, or holding what could not be written back (``NaN``, ``Infinity``, a
    number past a float's range, a lone surrogate)."""
    text = _read_text(path, client)
    if text is None:
        return None
    return _parse(text, path, client) if text.strip() else {}


def plan(client: Client, path: Path, name: str, entry: dict[str, Any]) -> Plan:
    """The file with server ``name`` set to ``entry``; every other key and server kept as it is (and,
    for a file with comments or TOML, every other line as written)."""
    from context_harness.cli.file_edit import EditError, set_jsonc, set_toml

    old_text = _read_text(path, client)
    before = None if old_text is None else _parse(old_text, path, client) if old_text.strip() else {}
    after = copy.deepcopy(before) if before is not None else {}
    servers = after.setdefault(client.servers_key, {})
    if not isinstance(servers, dict):
        kind = "TOML value" if client.format == "toml" else f"JSON {_kind(servers)}"
        raise _refuse(path, f'has "{client.servers_key}" set to a {kind}, not an object of servers', client)
    current = servers.get(name)
    kept = {k: v for k, v in current.items() if k not in TRANSPORT_KEYS} if isinstance(current, dict) else {}
    servers[name] = {**entry, **kept}
    if client.format == "json" or before == after:
        return Plan(path, before, after, client)
    try:
        if client.format == "toml":
            text = set_toml(old_text or "", client.servers_key, name, entry, TRANSPORT_KEYS, after)
        else:
            text = set_jsonc(old_text or "", client.servers_key, name, servers[name], after)
    except EditError as exc:
        raise _refuse(path, f"could not be edited keeping its comments ({exc})", client) from None
    return Plan(path, before, after, client, text, old_text)


def backup_name(path: Path) -> Path:
    """``NAME.bak-YYYYMMDDTHHMMSSZ`` beside the file, never an existing one (a dangling link counts)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{n}")
    return candidate


def _backup(source: Path, beside: Path) -> Path:
    """A copy of ``source`` (content, mode, times) at ``backup_name(beside)``, created exclusively: a
    link planted at that name (even a dangling one) is never written through; the next name is taken."""
    for _ in range(100):
        candidate = backup_name(beside)
        try:
            out = open(candidate, "xb")  # O_CREAT | O_EXCL: never follows a link
        except FileExistsError:  # planted between the look and the open
            continue
        with out, open(source, "rb") as src:
            shutil.copyfileobj(src, out)
        shutil.copystat(source, candidate)
        return candidate
    raise FileExistsError(errno.EEXIST, "no free backup name", str(beside))


def _writable(path: Path, mode: int) -> bool:
    """Whether ``path`` (of ``mode``) is meant to be written: a write bit set (root may write any file;
    a read-only one is still the user's ``chmod 444``) and this user may write it."""
    return bool(mode & 0o222) and os.access(path, os.W_OK)


def apply(plan: Plan) -> Path | None:
    """Write the plan's content: back up the existing file first, then write a temporary file of its own
    beside it (a random name, created exclusively, so a link planted there is never followed) with the
    file's mode, and rename it over the file. A symlinked file is written through the link (its target
    is replaced); a read-only one is refused. Returns the backup's path, if one was made."""
    target = plan.path.resolve() if plan.path.is_symlink() else plan.path
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ConfigError(f"{exc.filename or target}: cannot be read ({exc.strerror})") from None
    if mode is not None and not _writable(target, mode):
        print_hint = f"`ctx setup {plan.client.name} --print`" if plan.client else "`ctx setup CLIENT --print`"
        raise ConfigError(f"{plan.path} is read-only (mode {mode:04o}): `ctx setup` changed nothing; make it writable "
                          f"(chmod u+w {plan.path}) and run it again, or add the entry by hand ({print_hint} "
                          "shows it)")
    backup = None
    temporary: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode is not None:
            backup = _backup(target, plan.path)
        else:
            mask = os.umask(0o022)
            os.umask(mask)
            mode = 0o666 & ~mask  # a new file: as the user's umask makes files
        descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".ctx-setup.tmp",
                                                 dir=target.parent)
        with os.fdopen(descriptor, "wb") as out:
            if hasattr(os, "fchmod"):
                os.fchmod(out.fileno(), mode)
            out.write(plan.content().encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        if not hasattr(os, "fchmod"):
            os.chmod(temporary, mode)
        os.replace(temporary, target)
        temporary = None
    except OSError as exc:
        raise ConfigError(f"{exc.filename or target}: cannot be written ({exc.strerror})") from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return backup
