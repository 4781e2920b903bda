"""``[lua] http_allow`` and the refusal of non-public addresses (``lua/netpolicy.py``), then the real
client: refused requests never connect (a canary listener on 127.0.0.1 counts connections)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_harness.config import LuaConfig, ScriptConfig
from context_harness.errors import ConfigError, ToolError
from context_harness.lua.netpolicy import Policy, address_kind, parse_rule
from context_harness.lua.runtime import HostError
from context_harness.lua.tools import LuaTool
from support.lua_fire import BombServer, Canary

NON_PUBLIC = {
    "127.0.0.1": "loopback", "127.255.255.254": "loopback", "::1": "loopback",
    "10.1.2.3": "private", "172.16.0.1": "private", "192.168.1.1": "private",
    "169.254.169.254": "link-local", "fe80::1": "link-local",
    "100.64.0.1": "shared (CGNAT)", "0.0.0.0": "unspecified", "::": "unspecified",
    "224.0.0.1": "multicast", "239.255.255.250": "multicast", "ff02::1": "multicast",
    "fd00::1": "private", "fc00::5": "private",
    "::ffff:127.0.0.1": "loopback", "::ffff:10.0.0.1": "private", "::ffff:169.254.169.254": "link-local",
    "2002:7f00:1::": "loopback",  # 6to4 wrapping 127.0.0.1
    "64:ff9b::a9fe:a9fe": "link-local",  # NAT64 wrapping 169.254.169.254
    "240.0.0.1": "private", "255.255.255.255": "private", "192.0.2.1": "private",
}


@pytest.mark.parametrize("ip", list(NON_PUBLIC))
def test_non_public_addresses_are_named(ip: str) -> None:
    assert address_kind(ipaddress.ip_address(ip)) == NON_PUBLIC[ip]


@pytest.mark.parametrize("ip", ["93.184.215.14", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(ip: str) -> None:
    assert address_kind(ipaddress.ip_address(ip)) is None


def test_entry_forms() -> None:
    assert parse_rule("*").kind == "any"
    assert parse_rule("*:443").port == 443
    assert parse_rule("API.Example.com").name == "api.example.com"
    assert parse_rule("https://api.example.com/").name == "api.example.com"
    assert parse_rule("*.example.org").kind == "suffix"
    assert parse_rule("10.0.0.0/8").net == ipaddress.ip_network("10.0.0.0/8")
    assert parse_rule("127.0.0.1:8080").port == 8080
    assert parse_rule("[::1]:8080").net == ipaddress.ip_network("::1/128")
    assert parse_rule("fd00::/8").net == ipaddress.ip_network("fd00::/8")
    for bad in ["exa mple.com", "host:99999", "host:x", "[::1", "10.0.0.0/33:80", "a/b", "*foo.com", ":80"]:
        with pytest.raises(ConfigError, match=r"\[lua\] http_allow: .* is not a host name"):
            parse_rule(bad)


def test_policy_decisions() -> None:
    default = Policy.parse(None)
    assert default.pick("example.com", 443, ["93.184.215.14"]) == "93.184.215.14"
    with pytest.raises(HostError, match="'localhost' resolves to 127.0.0.1, which is a loopback address"):
        default.pick("localhost", 80, ["127.0.0.1"])
    with pytest.raises(HostError, match="'169.254.169.254' is a link-local address"):
        default.pick("169.254.169.254", 80, ["169.254.169.254"])
    # A name with one public and one private address: the connection goes to the public one.
    assert default.pick("mixed.example", 80, ["10.0.0.1", "93.184.215.14"]) == "93.184.215.14"

    listed = Policy.parse(["*", "127.0.0.1:8080", "10.0.0.0/8", "intranet.local"])
    assert listed.pick("localhost", 8080, ["127.0.0.1"]) == "127.0.0.1"
    with pytest.raises(HostError, match="loopback"):
        listed.pick("localhost", 8081, ["127.0.0.1"])
    assert listed.pick("wiki.corp", 80, ["10.9.8.7"]) == "10.9.8.7"
    assert listed.pick("intranet.local", 80, ["192.168.0.2"]) == "192.168.0.2"
    with pytest.raises(HostError, match="private"):
        listed.pick("other.local", 80, ["192.168.0.2"])

    only = Policy.parse(["api.example.com", "*.example.org"])
    assert only.pick("x.example.org", 443, ["93.184.215.14"]) == "93.184.215.14"
    with pytest.raises(HostError, match="host 'evil.com' is not in"):
        only.pick("evil.com", 443, ["93.184.215.14"])
    with pytest.raises(HostError, match="private"):  # subdomain wildcards reach public addresses only
        only.pick("x.example.org", 443, ["10.0.0.1"])
    with pytest.raises(HostError, match="not in"):
        Policy.parse([]).pick("example.com", 443, ["93.184.215.14"])


# -- through a tool: nothing refused ever connects ------------------------------------------------

PROBE = """
tool = { parameters = { {name = "url", type = "string", required = true} } }
function tool.execute(p) return http.get(p.url).status end
"""


@pytest.fixture
def canary() -> Iterator[Canary]:
    with Canary() as listener:
        yield listener


@pytest.fixture
def server() -> Iterator[BombServer]:
    with BombServer() as bombs:
        yield bombs


def probe(tmp_path: Path, allow: list[str] | None) -> LuaTool:
    path = tmp_path / "probe.lua"
    path.write_text(PROBE)
    return LuaTool("probe", ScriptConfig(path=path, timeout=5), LuaConfig(http_allow=allow), max_instances=1)


def test_by_default_loopback_in_every_spelling_is_refused(tmp_path: Path, canary: Canary) -> None:
    tool = probe(tmp_path, None)
    port = canary.port
    for host in ["127.0.0.1", "localhost", "[::1]", "2130706433", "0x7f000001", "127.1", "0177.0.0.1",
                 "[::ffff:127.0.0.1]", "0.0.0.0", "0", "LOCALHOST.", "127.0.0.1.", "[::ffff:7f00:1]"]:
        with pytest.raises(ToolError) as info:
            tool.call({"url": f"http://{host}:{port}/"})
        assert "refuses non-public addresses" in info.value.message or "not found" in info.value.message, host
    for url in ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/",
                "http://[fd00::1]/", "http://224.0.0.1/", "http://[fe80::1]/"]:
        with pytest.raises(ToolError, match="refuses non-public addresses"):
            tool.call({"url": url})
    assert canary.connections == []


def test_listing_an_address_and_port_allows_exactly_that(tmp_path: Path, canary: Canary,
                                                          server: BombServer) -> None:
    tool = probe(tmp_path, ["*", f"127.0.0.1:{server.port}"])
    assert tool.call({"url": f"{server.url}/ok"}) == 200
    assert tool.call({"url": f"http://localhost:{server.port}/ok"}) == 200
    with pytest.raises(ToolError, match="loopback"):
        tool.call({"url": f"http://127.0.0.1:{canary.port}/"})
    # Every redirect hop is checked: an allowed server cannot bounce the script to the canary.
    for target in [f"http://127.0.0.1:{canary.port}/", f"http://localhost:{canary.port}/x",
                   f"//127.0.0.1:{canary.port}/", "http://169.254.169.254/", f"http://2130706433:{canary.port}/"]:
        with pytest.raises(ToolError, match="refuses non-public addresses"):
            tool.call({"url": f"{server.url}/redirect?to={target}"})
    assert canary.connections == []


def test_a_malformed_entry_fails_at_load_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[lua\] http_allow: 'bad host' is not a host name"):
        probe(tmp_path, ["bad host"])
