"""Where Lua's ``http.*`` may connect: ``[lua] http_allow`` and the refusal of non-public addresses.

An entry of ``http_allow`` (case-insensitive) is one of:

- ``*``: any host, at public addresses only (the default when ``http_allow`` is not set);
- ``api.example.com``: that host name, whatever it resolves to (private addresses too);
- ``*.example.com``: its subdomains, at public addresses only;
- ``10.1.2.3``, ``::1``: that IP address; ``10.0.0.0/8``, ``fd00::/8``: a range (CIDR);
- any of these with ``:port`` (``127.0.0.1:8080``, ``[::1]:8080``, ``*:443``): that port only.

A host name is resolved once, every address is checked, and the connection goes to the address
that was checked (a second lookup could answer differently: DNS rebinding). A non-public address
(loopback, private, link-local, shared/CGNAT, multicast, unspecified, reserved, IPv6 unique-local
and link-local, and IPv4-mapped, 6to4 or NAT64 forms of these) is reached only when an IP or CIDR
entry covers it or an exact host-name entry names it.

Example::

    policy = Policy.parse(["*", "127.0.0.1:8080"])
    ip = policy.pick("localhost", 8080, ["127.0.0.1"])   # "127.0.0.1"
    policy.pick("localhost", 9000, ["127.0.0.1"])        # HostError: a loopback address
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from context_harness.common.addresses import address_kind
from context_harness.common.validation import plain_int
from context_harness.errors import ConfigError
from context_harness.lua.runtime import HostError

HOST_NAME = re.compile(r"^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")


@dataclass(frozen=True)
class Rule:
    kind: str  # "any", "name", "suffix" or "net"
    name: str = ""
    net: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None

    def port_ok(self, port: int) -> bool:
        return self.port is None or self.port == port


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        inside, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError
        return inside, _port(rest[1:]) if rest else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, _port(port)
    return entry, None


def _port(text: str) -> int:
    number = plain_int(text)
    if number is None or not 0 < number < 65536:
        raise ValueError
    return number


def parse_rule(raw: str) -> Rule:
    """One ``http_allow`` entry -> ``Rule``; ``ConfigError`` naming the entry when it is malformed."""
    entry = raw.strip().lower()
    entry = entry.split("://", 1)[-1].rstrip("/")
    try:
        host, port = _split_port(entry)
        if host == "*":
            return Rule("any", port=port)
        try:
            return Rule("net", net=ipaddress.ip_network(host, strict=False), port=port)
        except ValueError:
            pass
        host = host.rstrip(".")
        if not host or "/" in host or not HOST_NAME.match(host):
            raise ValueError
    except ValueError:
        raise ConfigError(f"[lua] http_allow: {raw!r} is not a host name, *.domain, IP address, CIDR range "
                          "or one of these with :port") from None
    if host.startswith("*."):
        return Rule("suffix", name=host[1:], port=port)
    return Rule("name", name=host, port=port)


class Policy:
    """The parsed ``http_allow`` list (None -> ``["*"]``)."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules

    @classmethod
    def parse(cls, allow: list[str] | None) -> Policy:
        if allow is None:
            return cls([Rule("any")])
        return cls([parse_rule(entry) for entry in allow if entry.strip()])

    def pick(self, host: str, port: int, addresses: list[str]) -> str:
        """The first of ``addresses`` (what ``host`` resolved to) this policy lets a script reach on
        ``port``; ``HostError`` saying why none is allowed."""
        host = host.lower().rstrip(".")
        rules = [r for r in self.rules if r.port_ok(port)]
        named = any(r.kind == "name" and r.name == host for r in rules)
        wildcard = any(r.kind == "any" or (r.kind == "suffix" and host.endswith(r.name)) for r in rules)
        refused: tuple[str, str] | None = None
        for text in addresses:
            try:
                ip = ipaddress.ip_address(text.split("%", 1)[0])
            except ValueError:  # not an address the checks can judge: never connected to
                continue
            if named or any(r.net is not None and ip.version == r.net.version and ip in r.net for r in rules):
                return text
            kind = address_kind(ip)
            if wildcard and kind is None:
                return text
            if wildcard and refused is None:
                refused = (text, kind or "non-public")
        if refused is None:
            raise HostError(f"host {host!r} is not in [lua] http_allow" + (f" (port {port})" if self.ports() else ""))
        ip_text, kind = refused
        where = repr(host) if ip_text == host else f"{host!r} resolves to {ip_text}, which"
        raise HostError(f"{where} is a {kind} address; Lua's http.* refuses non-public addresses unless "
                        f"[lua] http_allow lists them (e.g. \"{ip_text}\" or a CIDR range)")

    def ports(self) -> bool:
        return any(r.port is not None for r in self.rules)


__all__ = ["Policy", "Rule", "address_kind", "parse_rule"]
