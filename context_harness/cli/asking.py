"""``ctx search``, ``get`` and ``sources`` ask a serving process of the same workspace first.

A ``ctx serve`` (stdio or HTTP) or ``ctx watch`` of this workspace answers on its local socket
(``common/localsocket.py``) in milliseconds, with the model it has loaded already; without one the
command opens the workspace itself, as before (keyword search loads no model). Either way the
command renders the same payload (the one ``--json`` prints), so the output is the same. ``-v``
logs which process answered.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import click

from context_harness.cli.support import fail, load_config
from context_harness.common import localsocket
from context_harness.errors import HarnessError

if TYPE_CHECKING:
    from context_harness.config import Config

log = logging.getLogger("context_harness.cli")


def ask_server(ctx: click.Context, op: str, args: dict[str, Any]) -> tuple[dict[str, Any] | None, Config | None]:
    """``(payload, config)``: the serving process's answer to the read ``op``, or ``(None, config)``
    when none of this workspace answered (then answer locally with ``config``; None when it does
    not load: the local path says why). An error the server answers with ends the command."""
    try:
        config = load_config(ctx)
    except HarnessError:
        return None, None
    assert config is not None
    reply = localsocket.ask(config.data_dir, localsocket.identity(config.source_path, config.data_dir), op, args)
    if reply is None:
        log.debug("%s answered by this process: no serving process of this workspace answers on %s", op,
                  config.data_dir / localsocket.SOCKET_NAME)
        return None, config
    log.debug("%s answered by the serving process (pid %s) on %s", op, reply.get("pid"),
              config.data_dir / localsocket.SOCKET_NAME)
    if "error" in reply:
        error = HarnessError(str(reply["error"].get("message")))
        error.code = str(reply["error"].get("code"))
        fail(error)
    result = reply["result"]
    return result if isinstance(result, dict) else None, config


__all__ = ["ask_server"]
