"""``context-harness --workspaces [FILE]``: the workspaces of a registry served over stdio by one process.

The registry (``ctx workspace add``) is opened as a ``WorkspaceSet`` (``core/workspaces.py``), which
offers the calls the MCP adapter serves a ``Harness`` by; so the adapter, the stdio wire and their
limits are the single-workspace ones, unchanged. A registry none of whose workspaces can serve is
explained to the client as a config that does not load is (``stdio.serve_problem``).
"""

from __future__ import annotations

import os
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import cast

import anyio

from context_harness.core.face import Harness, WorkspaceSet
from context_harness.errors import HarnessError
from context_harness.server.sdk import defer_package_inits

defer_package_inits()  # before a module of this package imports the SDK: see sdk.py


def run_workspaces_stdio(file: Path) -> HarnessError | None:
    """Serve registry ``file``'s workspaces over stdio until the client closes; blocks. When none can
    serve, the client is told why and the error returned (as ``run_stdio`` does)."""
    from context_harness.server.stdio import serve_problem, serve_stdio

    parent = os.getppid()

    async def main() -> HarnessError | None:
        async with AsyncExitStack() as stack:
            try:
                served = await stack.enter_async_context(WorkspaceSet.open(file))
            except HarnessError as error:
                await stack.aclose()
                sys.stderr.write(f"error: {error.message}\n")
                sys.stderr.flush()
                if not sys.stdin.isatty():
                    await serve_problem(error, parent)
                return error
            await serve_stdio(cast(Harness, served), None, parent)  # it serves what a Harness serves
        return None

    return anyio.run(main)


__all__ = ["run_workspaces_stdio"]
