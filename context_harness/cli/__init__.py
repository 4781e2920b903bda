"""The command-line rim: ``ctx`` / ``context-harness``. Only this package imports click and rich.

``app`` holds the group and the knowledge-base commands; ``tools`` (``ctx tool``, ``ctx connector``),
``agents`` (``ctx agent``), ``agent_run`` (``ctx agent run / runs / show``), ``connections``
(``ctx recent``, ``ctx related``), ``notes`` (``ctx note``) and ``registry`` (``ctx registry``) add
theirs here. Each command parses its options, calls one ``Harness`` method and renders the result.
"""

from __future__ import annotations

import sys

from context_harness.cli.agent_run import run, runs, show
from context_harness.cli.agents import agent
from context_harness.cli.app import alias_serve_mcp, cli
from context_harness.cli.connections import recent, related
from context_harness.cli.doctor import doctor
from context_harness.cli.help import help_command
from context_harness.cli.hooks import hook
from context_harness.cli.notes import note
from context_harness.cli.registry import registry
from context_harness.cli.tools import connector, tool
from context_harness.cli.workspaces import workspace

cli.add_command(tool)
cli.add_command(connector)
cli.add_command(agent)
for command in (run, runs, show):
    agent.add_command(command)
cli.add_command(recent)
cli.add_command(related)
cli.add_command(note)
cli.add_command(registry)
cli.add_command(doctor)
cli.add_command(help_command)
cli.add_command(hook)
cli.add_command(workspace)


def main() -> None:
    cli.main(args=alias_serve_mcp(sys.argv[1:]), prog_name="ctx")


def main_server() -> None:
    """``context-harness``: like ``ctx``, but with no subcommand it serves MCP over stdio."""
    cli.main(args=alias_serve_mcp(sys.argv[1:]), prog_name="context-harness", obj={"serve_by_default": True})


__all__ = ["cli", "main", "main_server"]
