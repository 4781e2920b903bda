"""What a script from an extension registry may use: exactly what its manifest declares.

A script configured by the user (``[tools.script.NAME]`` pointing at the user's own file) runs with
no ``Grant`` and reaches every host table, as it always did. A script from a registry gets one:

- ``json``, ``log``, ``base64``, ``crypto``, ``sleep`` and ``print`` are always there;
- ``http``, ``env``, ``fs`` and (for tools and agents) ``context`` only when ``capabilities`` lists them;
  calling one that is not listed is a Lua error naming the function, the extension and what it
  declared (``env.get: not declared in the manifest of tools/web-fetch (registry community);
  capabilities: http``);
- ``http.*`` reaches only the ``hosts`` it lists (``http_allow`` patterns), and ``[lua] http_allow``
  still applies on top;
- ``env.get`` reads only the variables in ``env``;
- when ``sha256`` is set, the script loads only if its bytes are the ones checked (``registries/check.py``):
  a file edited after the check, or while a server runs, does not load.

Plain data: it travels to the Lua worker processes with the script's spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GATED = ("http", "env", "fs", "context")
ALWAYS = ("json", "log", "base64", "crypto", "sleep", "print")


@dataclass(frozen=True)
class Grant:
    owner: str  # "tools/web-fetch (registry community)"
    capabilities: frozenset[str] = frozenset()
    hosts: tuple[str, ...] = ()
    env: tuple[str, ...] = field(default=())
    sha256: str = ""  # the script's bytes the user's consent (or the registry's pin) is bound to; "": any

    def binds(self, fingerprint: str) -> bool:
        """Whether a script whose bytes hash to ``fingerprint`` may load under this grant."""
        return not self.sha256 or self.sha256 == fingerprint

    def allows(self, group: str) -> bool:
        return group not in GATED or group in self.capabilities

    def refusal(self) -> str:
        """The message after ``NAME:`` when a script calls a table it did not declare."""
        declared = ", ".join(sorted(self.capabilities)) or "none"
        return f"not declared in the manifest of {self.owner}; capabilities: {declared}"

    def host_refusal(self, host: str) -> str:
        listed = ", ".join(self.hosts) or "none"
        return f"host {host!r} is not declared in the manifest of {self.owner}; hosts: {listed}"


__all__ = ["ALWAYS", "GATED", "Grant"]
