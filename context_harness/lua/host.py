"""Host APIs a script can call, with the original Context Harness names.

``http.get/post/put/patch/delete``, ``json.parse/encode``, ``env.get``, ``log.debug/info/warn/error``
(and ``print``, which logs), ``fs.read/list`` (confined to the script's folder),
``base64.encode/decode``, ``crypto.sha256/hmac_sha256`` (hex), ``sleep(seconds)``.

Every function is a Python callable that never raises into Lua: it returns ``(status, value)``
and the Lua wrapper in ``boot.lua`` turns ``error`` into a Lua error the script can ``pcall``
and ``timeout`` into the sandbox timeout. Blocking calls use the run's remaining time.
"""

from __future__ import annotations

import base64 as b64
import binascii
import hashlib
import hmac
import inspect
import json as jsonlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from lupa.lua54 import lua_type

from context_harness.errors import HarnessError, Timeout
from context_harness.lua.convert import Budget, ConversionError, TooLarge, lua_integer, lua_number, text, to_lua, to_py
from context_harness.lua.grant import Grant
from context_harness.lua.httpclient import HttpClient
from context_harness.lua.runtime import HostError, HostLimits, HostTimeout, Sandbox

log = logging.getLogger(__name__)

MAX_LIST_ENTRIES = 10_000
HTTP_OPTION_KEYS = {"headers", "params", "body", "json", "timeout"}
OK, ERROR, TIMEOUT, MEMORY = b"ok", b"error", b"timeout", b"memory"


def guard(sandbox: Sandbox, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``fn`` so it returns ``(status, lua_value)`` and never raises into Lua. Extra arguments
    are dropped, as a Lua function drops them; an unexpected exception is a script error naming
    ``name`` (its traceback goes to the log)."""
    most = _positional_count(fn)

    def guarded(*args: Any) -> tuple[bytes, Any]:
        try:
            result = fn(*args[:most])
            if result is None or isinstance(result, (bool, float)):
                return OK, result
            if isinstance(result, int):
                return OK, lua_integer(result)
            nodes, size = sandbox.host_room()
            try:
                return OK, to_lua(sandbox.lua, result, Budget(nodes, size, sandbox.deadline))
            except ConversionError:
                return MEMORY, f"{name}: its result does not fit in the script's memory limit".encode()
        except HostTimeout:
            return TIMEOUT, None
        except Timeout:
            return TIMEOUT, None
        except (HostError, HarnessError, ConversionError) as exc:
            return ERROR, f"{name}: {exc.message}".encode()
        except Exception as exc:  # a bug here, not the script's: say which function, log the traceback
            log.exception("Lua host function %s failed", name)
            return ERROR, (f"{name} failed unexpectedly ({type(exc).__name__}); the server log has the "
                           "details").encode()

    return guarded


def _positional_count(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments ``fn`` takes (None: any number)."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def as_str(value: Any, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise HostError(f"{what} must be a string")


def as_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value).encode()
    raise HostError(f"{what} must be a string")


def as_number(value: Any, what: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise HostError(f"{what} must be a number")


def as_table(value: Any, what: str, sandbox: Sandbox | None = None) -> dict[str, Any]:
    if value is None:
        return {}
    if sandbox is None:
        data = to_py(value, what=what, max_nodes=100_000, max_bytes=16_000_000)
    else:
        data = sandbox_data(sandbox, value, what)
    if data == {} or data == []:
        return {}
    if not isinstance(data, dict):
        raise HostError(f"{what} must be a table of named values")
    return data


def sandbox_data(sandbox: Sandbox, value: Any, what: str) -> Any:
    """A Lua value as Python data, within what is left of the script's memory cap and deadline."""
    nodes, size = sandbox.host_room()
    try:
        return to_py(value, what=what, max_nodes=nodes, max_bytes=size, deadline=sandbox.deadline)
    except TooLarge as exc:
        raise HostError(f"{exc.message}: it does not fit in the script's memory limit "
                        "(set `memory_limit` in its config to allow more)") from None
    except ConversionError as exc:
        raise HostError(exc.message) from None


def parse_json(raw: str | bytes, sandbox: Sandbox) -> Any:
    """``json.loads`` within the script's memory cap: a text holding more values than the cap
    allows is refused before it is parsed (each value costs a Python object and a Lua slot)."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    values = 1 + sum(data.count(mark) for mark in (b",", b"[", b"{", b":"))
    nodes, size = sandbox.host_room()
    if values > nodes or len(raw) > size:  # garbage from earlier calls may still hold the room
        sandbox.collect()
        nodes, size = sandbox.host_room()
    if len(raw) > size:
        raise HostError(f"the JSON text ({len(raw)} bytes) does not fit in the script's memory limit")
    if values > nodes:
        raise HostError(f"the JSON text holds up to {values} values; the script's memory limit allows {nodes} "
                        "(set `memory_limit` in its config to allow more)")
    try:
        return jsonlib.loads(raw, parse_int=lua_number)
    except jsonlib.JSONDecodeError as exc:
        raise InvalidJson(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except (RecursionError, ValueError):
        raise InvalidJson("JSON nested too deeply or invalid") from None


class InvalidJson(HostError):
    """The text is not JSON (as opposed to JSON too large for the memory cap)."""


class HostAPI:
    """Builds and installs the host tables into one sandbox for one script. With a ``grant`` (a
    script from a registry) only the tables it declares work, ``http`` reaches only its hosts and
    ``env`` only its variables; the others raise an error naming what the manifest declared."""

    def __init__(self, sandbox: Sandbox, *, label: str, script_dir: Path, lua_config: HostLimits,
                 env_names: list[str], grant: Grant | None = None) -> None:
        self.sandbox = sandbox
        self.label = label
        self.script_dir = script_dir
        self.lua_config = lua_config
        self.grant = grant
        self.env_names = set(lua_config.env_allow) | set(env_names) if grant is None else set(grant.env)
        declared = None if grant is None else (list(grant.hosts), grant.host_refusal)
        self.http_client = HttpClient(lua_config.http_allow, lua_config.max_response_bytes, declared=declared)
        self.logger = logging.getLogger(f"context_harness.lua.script.{label}")

    def install(self) -> None:
        groups: dict[str, dict[str, Callable[..., Any]]] = {
            "http": {m.lower(): self._http(m) for m in ("GET", "POST", "PUT", "PATCH", "DELETE")},
            "json": {"parse": self.json_parse, "encode": self.json_encode},
            "env": {"get": self.env_get},
            "log": {lvl: self._log(lvl) for lvl in ("debug", "info", "warn", "error")},
            "fs": {"read": self.fs_read, "list": self.fs_list},
            "base64": {"encode": self.base64_encode, "decode": self.base64_decode},
            "crypto": {"sha256": self.sha256, "hmac_sha256": self.hmac_sha256},
        }
        lua = self.sandbox.lua
        for group, functions in groups.items():
            if self.grant is not None and not self.grant.allows(group):
                functions = {k: self._refused for k in functions}
            table = lua.table_from({k.encode(): guard(self.sandbox, f"{group}.{k}", f) for k, f in functions.items()})
            self.sandbox.api.install(group.encode(), table)
        self.sandbox.api.install_function(b"sleep", guard(self.sandbox, "sleep", self.sleep))
        self.sandbox.api.install_function(b"print", guard(self.sandbox, "print", self._log("info")))

    def _refused(self, *_args: Any) -> None:
        assert self.grant is not None
        raise HostError(self.grant.refusal())

    # -- json -------------------------------------------------------------------------------

    def json_parse(self, s: Any = None) -> Any:
        return parse_json(as_str(s, "the argument"), self.sandbox)

    def json_encode(self, value: Any = None) -> str:
        data = sandbox_data(self.sandbox, value, "value")
        out = jsonlib.dumps(data, ensure_ascii=False, separators=(",", ":"))
        if len(out) > self.sandbox.host_room()[1]:
            raise HostError(f"the JSON text ({len(out)} characters) does not fit in the script's memory limit")
        return out

    # -- env / log / sleep ------------------------------------------------------------------

    def env_get(self, name: Any = None) -> str | None:
        key = as_str(name, "the variable name")
        if key not in self.env_names:
            return None
        return os.environ.get(key)

    def _log(self, level: str) -> Callable[..., None]:
        py_level = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
                    "error": logging.ERROR}[level]

        def emit(*args: Any) -> None:
            message = " ".join(_display(a) for a in args)
            self.logger.log(py_level, "[%s] %s", self.label, message[:10_000])

        return emit

    def sleep(self, seconds: Any = None) -> None:
        wanted = max(0.0, as_number(seconds, "seconds"))
        remaining = self.sandbox.remaining()
        if wanted >= remaining:
            time.sleep(max(0.0, remaining))
            raise HostTimeout()
        time.sleep(wanted)

    # -- fs ---------------------------------------------------------------------------------

    def _confined(self, path: Any, default: str | None = None) -> Path:
        raw = default if path is None and default is not None else as_str(path, "the path")
        if "\x00" in raw or raw.startswith(("/", "\\")) or os.path.isabs(raw):
            raise HostError(f"{raw!r}: only paths relative to the script's folder are allowed")
        if ".." in Path(raw).parts or ".." in raw.replace("\\", "/").split("/"):
            raise HostError(f"{raw!r}: '..' is not allowed; paths stay inside the script's folder")
        root = os.path.realpath(self.script_dir)
        real = os.path.realpath(os.path.join(root, raw))
        if real != root and not real.startswith(root + os.sep):
            raise HostError(f"{raw!r} leads outside the script's folder")
        return Path(real)

    def fs_read(self, path: Any = None) -> bytes:
        target = self._confined(path)
        if not target.is_file():
            raise HostError(f"{as_str(path, 'the path')!r} is not a file in the script's folder")
        cap = self.lua_config.max_response_bytes
        if target.stat().st_size > cap:
            raise HostError(f"{as_str(path, 'the path')!r} is larger than {cap} bytes")
        return target.read_bytes()

    def fs_list(self, path: Any = None) -> list[str]:
        target = self._confined(path, default=".")
        if not target.is_dir():
            raise HostError(f"{as_str(path or b'.', 'the path')!r} is not a folder in the script's folder")
        names = sorted(p.name for p in target.iterdir())
        return names[:MAX_LIST_ENTRIES]

    # -- base64 / crypto --------------------------------------------------------------------

    def base64_encode(self, s: Any = None) -> bytes:
        return b64.b64encode(as_bytes(s, "the argument"))

    def base64_decode(self, s: Any = None) -> bytes:
        data = b"".join(as_bytes(s, "the argument").split())
        try:
            if b"-" in data or b"_" in data:
                return b64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))
            return b64.b64decode(data + b"=" * (-len(data) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise HostError("invalid base64 input") from None

    def sha256(self, s: Any = None) -> str:
        return hashlib.sha256(as_bytes(s, "the argument")).hexdigest()

    def hmac_sha256(self, key: Any = None, message: Any = None) -> str:
        return hmac.new(as_bytes(key, "the key"), as_bytes(message, "the message"), hashlib.sha256).hexdigest()

    # -- http -------------------------------------------------------------------------------

    def _http(self, method: str) -> Callable[..., Any]:
        def call(url: Any = None, second: Any = None, third: Any = None) -> dict[str, Any]:
            if method in ("GET", "DELETE"):
                return self.http_request(method, url, body=None, opts=second)
            # post/put/patch accept (url, body, opts) like the original, or (url, opts).
            if third is None and _looks_like_options(second):
                return self.http_request(method, url, body=None, opts=second)
            return self.http_request(method, url, body=second, opts=third)

        return call

    def http_request(self, method: str, url: Any, *, body: Any, opts: Any) -> dict[str, Any]:
        target = as_str(url, "the URL")
        options = as_table(opts, "options", self.sandbox)
        unknown = set(options) - HTTP_OPTION_KEYS
        if unknown:
            raise HostError(f"unknown option(s) {', '.join(sorted(unknown))}; "
                            f"use {', '.join(sorted(HTTP_OPTION_KEYS))}")
        headers = {str(k): _header_value(v, k) for k, v in _as_mapping(options.get("headers"), "headers").items()}
        params = _as_mapping(options.get("params"), "params")
        if params:
            query = urlencode(_flatten_params(params), doseq=True)
            target += ("&" if "?" in target else "?") + query
        payload: bytes | None = None
        if body is not None:
            if isinstance(body, bytes):
                payload = body
            elif isinstance(body, (int, float)) and not isinstance(body, bool):
                payload = str(body).encode()
            else:
                payload = self.json_encode(body).encode()
                _default_header(headers, "Content-Type", "application/json")
        elif "json" in options:
            payload = jsonlib.dumps(options["json"], ensure_ascii=False).encode()
            _default_header(headers, "Content-Type", "application/json")
        elif "body" in options:
            raw = options["body"]
            payload = raw.encode() if isinstance(raw, str) else jsonlib.dumps(raw).encode()
        script_deadline = self.sandbox.deadline
        deadline = script_deadline
        if "timeout" in options:
            seconds = as_number(options["timeout"], "options.timeout")
            if seconds <= 0:
                raise HostError("options.timeout must be positive")
            deadline = min(deadline, time.monotonic() + seconds)
        response = self.http_client.request(method, target, headers=headers, body=payload,
                                            deadline=deadline, script_deadline=script_deadline)
        return response.as_lua_data(self._response_json)

    def _response_json(self, body: bytes) -> Any:
        """A response body's JSON for ``response.json``: None when it is not JSON; an error when it
        is JSON too large for the script's memory cap."""
        try:
            return parse_json(body, self.sandbox)
        except InvalidJson:
            return None


def _looks_like_options(value: Any) -> bool:
    """Is ``http.post(url, t)``'s table the options (``{headers=..., json=...}``) or a JSON body?"""
    if lua_type(value) != "table":
        return False
    keys = [k for k, _ in value.items()]
    return bool(keys) and all(isinstance(k, bytes) and k.decode("utf-8", "replace") in HTTP_OPTION_KEYS
                              for k in keys)


def _as_mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None or value == [] or value == {}:
        return {}
    if not isinstance(value, dict):
        raise HostError(f"options.{what} must be a table of names to values")
    return value


def _header_value(value: Any, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise HostError(f"header {name!r} must be a string")
    out = str(value)
    if "\r" in out or "\n" in out:
        raise HostError(f"header {name!r} contains a line break")
    return out


def _default_header(headers: dict[str, str], name: str, value: str) -> None:
    if not any(k.lower() == name.lower() for k in headers):
        headers[name] = value


def _flatten_params(params: dict[str, Any]) -> list[tuple[str, Any]]:
    pairs: list[tuple[str, Any]] = []
    for key, value in params.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, bool):
                v = "true" if v else "false"
            elif isinstance(v, (dict, list)) or v is None:
                raise HostError(f"params.{key} must be a string, number or boolean")
            pairs.append((key, v))
    return pairs


def _display(value: Any) -> str:
    if isinstance(value, bytes):
        return text(value)
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    try:
        return jsonlib.dumps(to_py(value, what="value", max_nodes=10_000, max_bytes=100_000),
                             ensure_ascii=False)
    except ConversionError:
        return f"<{lua_type(value) or 'value'}>"


__all__ = ["HostAPI", "as_bytes", "as_number", "as_str", "as_table", "guard"]
