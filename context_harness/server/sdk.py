"""The MCP SDK's modules without its package-level re-exports, for a quick start.

Importing any ``mcp.server.…`` module first runs ``mcp/__init__.py`` and ``mcp/server/__init__.py``,
and those re-export the SDK's whole surface: its client side (``mcp.client``, with an HTTP client)
and the high-level ``MCPServer`` — about 120 modules and a fifth of the cold start, none of which
serves a request here. ``defer_package_inits`` registers the two packages without running their
``__init__``, so their submodules import directly. Nothing breaks for code that does want those
names: the first lookup of one (``mcp.Client``, ``from mcp.server import MCPServer``) runs the real
``__init__`` then. A package already imported is left as it is.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

DEFERRED_PACKAGES = ("mcp", "mcp.server")  # parents first
_INIT_LOCK = threading.RLock()


def defer_package_inits() -> None:
    """Register ``DEFERRED_PACKAGES`` (those not yet imported) with their ``__init__`` deferred."""
    for name in DEFERRED_PACKAGES:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return  # not installed as expected: the ordinary import will say so
        package = importlib.util.module_from_spec(spec)
        package.__getattr__ = _init_on_first_lookup(package, spec)  # type: ignore[method-assign]
        sys.modules[name] = package
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, package)


def _init_on_first_lookup(package: ModuleType, spec: ModuleSpec) -> Any:
    """A module ``__getattr__`` (PEP 562): the first name the package lacks runs its ``__init__``."""

    def lookup(attribute: str) -> Any:
        if attribute.startswith("__") and attribute != "__all__":  # the import system's probes
            raise AttributeError(f"module {package.__name__!r} has no attribute {attribute!r}")
        with _INIT_LOCK:  # once, even when two threads look up at the same time
            if package.__dict__.pop("__getattr__", None) is not None:
                assert spec.loader is not None
                spec.loader.exec_module(package)
        return getattr(package, attribute)

    return lookup


__all__ = ["DEFERRED_PACKAGES", "defer_package_inits"]
