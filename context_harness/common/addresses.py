"""Whether an IP address is public, and what it is when it is not: the one judgement Lua's ``http.*``
(``lua/netpolicy.py``) and the OAuth server's client-document fetches (``server/oauth/documents.py``)
make before connecting anywhere."""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.ip_network("64:ff9b::/96")
SHARED = ipaddress.ip_network("100.64.0.0/10")


def address_kind(ip: IPAddress) -> str | None:
    """None for a public address; otherwise what it is ("loopback", "private", ...)."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            inner = address_kind(embedded)
            if inner is not None or ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d is a.b.c.d
                return inner
    checks = (("unspecified", ip.is_unspecified), ("loopback", ip.is_loopback),
              ("link-local", ip.is_link_local), ("multicast", ip.is_multicast),
              ("shared (CGNAT)", isinstance(ip, ipaddress.IPv4Address) and ip in SHARED),
              ("private", ip.is_private), ("reserved", ip.is_reserved))
    for kind, hit in checks:
        if hit:
            return kind
    return None if ip.is_global else "non-public"


__all__ = ["IPAddress", "address_kind"]
