"""The server rim: MCP over stdio (``stdio``) and Streamable HTTP with the REST shim (``http``),
both over the SDK adapter in ``mcp``. Only this package imports the MCP SDK's server side,
Starlette and uvicorn.

``run_server(setup)`` opens a ``Harness`` for a ``ServerSetup`` (config + extensions) and serves it;
``ctx serve --http`` gives it a ``Config``, served with the extensions installed packages declare.
``run_stdio`` is ``ctx serve`` over stdio: a setup that cannot be served is explained to the client
(``stdio.serve_problem``) instead of exiting before the handshake. This is
the one rim module that imports ``extensions``: its public entry takes what ``prepare_server`` made.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from functools import partial

import anyio

from context_harness.config import Config
from context_harness.core.face import Harness, ServerSetup, prepare_server
from context_harness.errors import HarnessError
from context_harness.server.sdk import defer_package_inits

defer_package_inits()  # before a module of this package imports the SDK: see sdk.py


async def serve(setup: ServerSetup, *, http: bool = False, bind: str | None = None, agent: str | None = None) -> None:
    """Open the Harness for ``setup`` and serve it over stdio, or HTTP with ``http=True``."""
    if http:
        setup.config.require_http()  # a key only HTTP reads may use an unset variable: stdio serves anyway
    async with Harness.open(setup.config, setup.extensions) as harness:
        if http:
            from context_harness.server.http import serve_http

            await serve_http(harness, bind, agent)
        else:
            from context_harness.server.stdio import serve_stdio

            await serve_stdio(harness, agent)


def run_stdio(load: Callable[[], Config], agent: str | None = None) -> HarnessError | None:
    """Serve MCP over stdio the config ``load()`` returns, with the installed extensions. One that
    cannot be served (it does not load, an extension or the workspace does not open, ``agent`` is
    unknown) is explained to the client instead (``stdio.serve_problem``) and its error returned,
    once the client has closed (at once when stdin is a terminal); None after a normal serve. Blocks."""
    from context_harness.server.stdio import serve_problem, serve_stdio

    parent = os.getppid()  # now: should the client die while the config loads, the watch still sees it

    async def main() -> HarnessError | None:
        async with AsyncExitStack() as stack:
            try:
                setup = prepare_server(load())
                harness = await stack.enter_async_context(Harness.open(setup.config, setup.extensions))
                if agent is not None:
                    harness.tools(agent)  # an unknown agent is said to the client too
            except HarnessError as error:
                await stack.aclose()
                sys.stderr.write(f"error: {error.message}\n")
                sys.stderr.flush()
                if not sys.stdin.isatty():  # a person at a terminal has read it: no client to tell
                    await serve_problem(error, parent)
                return error
            await serve_stdio(harness, agent, parent)
        return None

    return anyio.run(main)


def run_server(setup: ServerSetup | Config, *, http: bool = False, bind: str | None = None,
               agent: str | None = None) -> None:
    """Serve a ``ServerSetup`` (``context_harness.extensions.prepare_server``: config, extension
    agents, tools and connectors), or a ``Config`` with the installed extensions (an entry point that
    cannot load is a ``ConfigError`` now), over stdio, or Streamable HTTP + REST with ``http=True``. Blocks."""
    if isinstance(setup, Config):
        setup = prepare_server(setup)
    anyio.run(partial(serve, setup, http=http, bind=bind, agent=agent))


__all__ = ["run_server", "run_stdio", "serve"]
