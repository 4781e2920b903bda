"""``${VAR}`` expansion in a parsed config, and the parts set aside when their variables are unset.

A variable is resolved where it is used: one missing variable breaks the part that needs it, not the
whole config. ``set_aside`` takes out the component tables (a connector, a Lua tool, an agent) and
the keys only the HTTP transport reads (``HTTP_KEYS``: ``[server] auth_token``, ``bind`` ...) whose
variables are unset, and reports each as ``Unavailable``: stdio, the CLI and the other sources go
on, and ``ctx serve --http`` refuses to start naming the key (``http_unavailable``). ``expand_vars``
expands the rest; an unset variable anywhere else (``[db] url``, ``[embedding] api_key``) fails the
load naming its key path.
"""

from __future__ import annotations

import copy
import os
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from context_harness.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")


HTTP_KEYS = ("auth_token", "bind", "allowed_hosts", "allowed_origins", "cors_origins")
"""Keys of ``[server]`` that only the HTTP transport reads: an unset variable in one of them sets HTTP
aside (``kind="http"``) instead of failing the load, so stdio still serves the same config."""
HTTP_NAME = "HTTP"


class Unavailable(BaseModel):
    """A component (connector, Lua tool, agent) left out because ``${VAR}``s in its table are not set,
    or (``error``) because its file did not load: a syntax error, an error at load, bad metadata; or
    (``kind="http"``) a key only the HTTP transport reads. Everything else works; this one is reported
    unhealthy (sources, tool list, the server log)."""

    kind: Literal["connector", "tool", "agent", "model", "http"]
    name: str  # the connector's label (TYPE:NAME), the tool's or the agent's name; HTTP_NAME for http
    key_path: str  # "tools.script.jira", "server.auth_token"
    variables: list[str]
    error: str | None = None  # why its file did not load (then ``variables`` is empty)
    fix: str | None = Field(default=None, exclude=True)  # what to do, when not "fix the file"

    @property
    def label(self) -> str:
        """What the server log calls it: "tool jira", "connector script:jira", "HTTP serving"."""
        return "HTTP serving" if self.kind == "http" else f"{self.kind} {self.name}"

    @property
    def message(self) -> str:
        if self.error is not None:
            fix = self.fix or "fix the file; a running server loads it again within a second, no restart"
            return f"{self.error} ({fix})"
        names = ", ".join(self.variables)
        plural = "s" if len(self.variables) > 1 else ""
        them = "them" if plural else "it"
        if self.kind == "http":
            section, _, key = self.key_path.partition(".")
            return (f"environment variable{plural} {names} not set (needed by [{section}] {key}, which only "
                    f"`ctx serve --http` reads); set {them} where the HTTP server starts; stdio and the CLI work "
                    "without it")
        return (f"environment variable{plural} {names} not set (needed by [{self.key_path}]); set "
                f"{them} and restart, or write ${{{self.variables[0]}:-default}}")


def expand_vars(value: Any, where: str, environ: dict[str, str] | None = None) -> Any:
    """Expand ``${VAR}`` / ``${VAR:-default}`` in every string of a parsed TOML tree."""
    env = os.environ if environ is None else environ
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise ConfigError(
                f"{where}: environment variable {name} is not set (set it, or write ${{{name}:-default}})"
            )

        return _VAR.sub(substitute, value)
    if isinstance(value, dict):
        return {k: expand_vars(v, f"{where}.{k}" if where else k, environ) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_vars(v, f"{where}[{i}]", environ) for i, v in enumerate(value)]
    return value


def missing_vars(value: Any, environ: dict[str, str] | None = None) -> list[str]:
    """The names of the ``${VAR}``s (without a default) in ``value`` that are not set, in order."""
    env = os.environ if environ is None else environ
    if isinstance(value, str):
        return [m.group(1) for m in _VAR.finditer(value) if m.group(1) not in env and m.group(2) is None]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return list(dict.fromkeys(name for item in items for name in missing_vars(item, environ)))


AGENT_RESERVED = ("paths", "skill_paths", "inline", "script", "page_size", "approve_writes")  # see agents/settings.py


ComponentKind = Literal["connector", "tool", "agent", "model"]


def components(raw: dict[str, Any]) -> list[tuple[tuple[str, ...], ComponentKind, str]]:
    """``(key path, kind, name)`` of every component table: ``connectors.TYPE.NAME``,
    ``tools.script.NAME``, ``models.NAME``, ``agents.NAME``, ``agents.inline.NAME`` and ``agents.script.NAME``."""
    out: list[tuple[tuple[str, ...], ComponentKind, str]] = []

    def tables(node: Any) -> list[tuple[str, Any]]:
        return [(k, v) for k, v in node.items() if isinstance(v, dict)] if isinstance(node, dict) else []

    for type_name, entries in tables(raw.get("connectors")):
        out += [(("connectors", type_name, name), "connector", f"{type_name}:{name}") for name, _ in tables(entries)]
    out += [(("tools", "script", name), "tool", name) for name, _ in tables((raw.get("tools") or {}).get("script"))]
    out += [(("models", name), "model", name) for name, _ in tables(raw.get("models"))]
    agents = raw.get("agents")
    out += [(("agents", name), "agent", name) for name, _ in tables(agents) if name not in AGENT_RESERVED]
    for group in ("inline", "script"):
        out += [(("agents", group, name), "agent", name) for name, _ in tables((agents or {}).get(group))]
    return out


def set_aside(raw: dict[str, Any], environ: dict[str, str] | None = None) -> tuple[dict[str, Any], list[Unavailable]]:
    """``raw`` without the components whose tables use unset variables, nor the HTTP-only keys whose
    values do, and those parts: one missing variable breaks one thing, not the whole config."""
    unavailable: list[Unavailable] = []
    paths: list[tuple[str, ...]] = []
    for path, kind, name in components(raw):
        missing = missing_vars(_at(raw, path[:-1])[path[-1]], environ)
        if missing:
            paths.append(path)
            unavailable.append(Unavailable(kind=kind, name=name, key_path=".".join(path), variables=missing))
    server = raw.get("server")
    for key in HTTP_KEYS:
        missing = missing_vars(server.get(key), environ) if isinstance(server, dict) else []
        if missing:
            paths.append(("server", key))
            unavailable.append(Unavailable(kind="http", name=HTTP_NAME, key_path=f"server.{key}", variables=missing))
    if not unavailable:
        return raw, []
    kept = copy.deepcopy(raw)
    for path in paths:
        _at(kept, path[:-1]).pop(path[-1], None)
    return kept, unavailable


def http_unavailable(unavailable: list[Unavailable]) -> str | None:
    """Why ``ctx serve --http`` cannot start with this config (a key it needs uses an unset variable),
    or None when it can."""
    missing = [u for u in unavailable if u.kind == "http"]
    if not missing:
        return None
    return "cannot serve HTTP: " + "; ".join(u.message for u in missing)


def set_aside_listing(unavailable: list[Unavailable]) -> list[dict[str, Any]]:
    """What ``sources`` lists as set aside for unset variables beside the sources themselves (Lua
    tools, agents, HTTP serving): ``{kind, name, key_path, variables, message}`` each."""
    return [{"kind": u.kind, "name": u.name, "key_path": u.key_path, "variables": u.variables, "message": u.message}
            for u in unavailable if u.kind != "connector" and u.variables]


def _at(tree: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for key in path:
        tree = tree[key]
    return tree


__all__ = ["AGENT_RESERVED", "HTTP_KEYS", "HTTP_NAME", "ComponentKind", "Unavailable", "components", "expand_vars",
           "http_unavailable", "missing_vars", "set_aside", "set_aside_listing"]
