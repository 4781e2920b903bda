"""``ctx agent ...``: list agents, resolve one against the knowledge base, scaffold a new one.

Part of the CLI rim. ``ctx agent list --json`` prints exactly ``GET /agents/list``; ``ctx agent
test`` resolves an agent through ``Harness.resolve_agent``, as ``prompts/get`` and ``POST
/agents/{name}/prompt`` do, and reports the time taken and the searches and fetches it ran.
Errors print one line on stderr and exit 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from context_harness.cli.support import Group, config_option, load_config, print_json, required_config, run_with_harness
from context_harness.cli.tools import snippet_path, write_new
from context_harness.errors import BadRequest

if TYPE_CHECKING:
    from context_harness.config import Config, Unavailable
    from context_harness.core.face import AgentInfo, AgentResolution, Harness

LUA_TEMPLATE = '''-- {name}: a Lua agent. Register it in ctx.toml:
--   [agents.script.{name}]
--   path = "{path}"
-- then try it: ctx agent test {name} --arg topic="getting started"
agent = {{
  name = "{name}",
  description = "Describe what {name} does (shown in prompt pickers and agent_list).",
  tools = {{"search", "get"}},
  arguments = {{
    {{name = "topic", description = "What the conversation is about", required = false, default = "getting started"}},
  }},
}}

-- Runs at every prompts/get, agent_inject and POST /agents/{name}/prompt: pre-fetch context here.
function agent.resolve(args, config, context)
  local hits = context.search({{query = args.topic, limit = 3}})
  local lines = {{}}
  for _, hit in ipairs(hits) do
    lines[#lines + 1] = string.format("- %s (id %s)", hit.title or hit.source_id, hit.id)
  end
  local found = #lines > 0 and table.concat(lines, "\\n") or "(no indexed document matches yet)"
  return {{
    system = "You are {name}. Help the user with " .. args.topic .. ". Use `search` and `get` to ground "
      .. "every answer in the knowledge base.\\n\\nDocuments that look relevant:\\n" .. found,
    messages = {{ {{role = "user", content = "Let's work on " .. args.topic .. "."}} }},
  }}
end

return agent
'''

MARKDOWN_TEMPLATE = '''---
name: {name}
description: Describe what {name} does (shown in prompt pickers and agent_list).
tools: search, get, sources
---
You are {name}. Help the user with their question using the knowledge base.

Before answering, `search` for the relevant documents and read the important ones with `get`.
Quote exact commands and settings from the documents, name the documents you used, and say plainly
when the knowledge base does not cover something.
'''


@click.group(cls=Group)
def agent() -> None:
    """Agents: list them, resolve one against the knowledge base, or start a new one."""


@agent.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON as REST GET /agents/list.")
@config_option
@click.pass_context
def agent_list(ctx: click.Context, as_json: bool, config_path: str | None, root: str | None) -> None:
    """List the agents MCP clients see as prompts (TOML, Markdown, Lua and Python)."""
    async def agents(harness: Harness) -> tuple[list[AgentInfo], list[Unavailable]]:
        return harness.agents(), harness.unavailable_agents()

    config = required_config(ctx)
    infos, unavailable = run_with_harness(ctx, agents, config)  # unset ${VAR}s and files that did not load
    if as_json:
        print_json({"agents": [info.model_dump(mode="json") for info in infos]})
        return
    if not infos and not unavailable:
        click.echo(f"no agents defined: none in {_looked_in(config)} (`ctx agent init NAME` writes one)")
    for missing in unavailable:
        click.echo(f"{missing.name}  [UNAVAILABLE]  {missing.message}")
    for info in infos:
        click.echo(f"{info.name}  [{info.source}]  tools: {', '.join(info.tools) or 'none'}")
        if info.description:
            click.echo(f"    {info.description}")
        if info.arguments:
            click.echo("    arguments: " + ", ".join(f"{a.name}{'*' if a.required else ''}" for a in info.arguments))


def _looked_in(config: Config) -> str:
    """Where agents come from for ``config``: its [agents] tables and the Markdown folders, as paths
    relative to the working folder where they can be."""
    from context_harness.core.face import agent_settings

    def shown(path: Path) -> str:
        try:
            return f"{path.relative_to(Path.cwd()).as_posix()}/"
        except ValueError:
            return f"{path.as_posix()}/"

    settings = agent_settings(config)
    where = f"[agents] of {shown(config.source_path)[:-1]}" if config.source_path else "the [agents] tables"
    return ", ".join([where, *(shown(p) for p in settings.agent_paths)])


def parse_args(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BadRequest(f"--arg {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


@agent.command("test")
@click.argument("name")
@click.option("--arg", "args", multiple=True, metavar="K=V", help="An argument of the agent (repeatable).")
@click.option("--json", "as_json", is_flag=True,
              help="Print {name, source, system, tools, messages, resolve_ms, searches, fetches} as JSON.")
@config_option
@click.pass_context
def agent_test(ctx: click.Context, name: str, args: tuple[str, ...], as_json: bool, config_path: str | None,
               root: str | None) -> None:
    """Resolve agent NAME once against the knowledge base and print what a client would receive:
    source, tools, system prompt, messages, the time to resolve and the searches and fetches run."""
    arguments = parse_args(args)

    async def resolve(harness: Harness) -> tuple[AgentInfo, AgentResolution]:
        info = harness.agent(name)
        return info, await harness.resolve_agent(name, arguments)

    info, resolution = run_with_harness(ctx, resolve)
    prompt, ms = resolution.prompt, resolution.ms
    if as_json:
        print_json({"name": name, "source": info.source, **prompt.model_dump(mode="json"),
                     "resolve_ms": round(ms, 3), "searches": resolution.searches,
                    "fetches": resolution.fetches})
        return
    click.echo(f"agent: {name} ({info.source})")
    click.echo(f"tools: {', '.join(prompt.tools) or 'none'}")
    searches, fetches = resolution.searches, resolution.fetches
    click.echo(f"resolved in {ms:.1f} ms: {searches} search{'es' if searches != 1 else ''}, "
               f"{fetches} fetch{'es' if fetches != 1 else ''}")
    click.echo("\n--- system prompt ---")
    click.echo(prompt.system.rstrip())
    for i, message in enumerate(prompt.messages, 1):
        click.echo(f"\n--- message {i} ({message.role}) ---")
        click.echo(message.content.rstrip())


@agent.command("init")
@click.argument("name")
@click.option("--lua", "kind", flag_value="lua", help="Write a Lua agent (agents/NAME.lua) that pre-searches.")
@click.option("--markdown", "kind", flag_value="markdown", default=True,
              help="Write a Markdown agent (agents/NAME.md, Claude Code subagent format; the default).")
@click.option("--path", "path", type=click.Path(dir_okay=False), default=None,
              help="Where to write the file (default: agents/NAME.md or .lua beside the config). Never overwrites.")
@click.pass_context
def agent_init(ctx: click.Context, name: str, kind: str, path: str | None) -> None:
    """Write a starter agent that resolves as generated; print how to register and try it."""
    from context_harness.core.face import scripts

    scripts.check_agent_name(name)
    config = load_config(ctx, required=False)
    folder = Path("agents")
    if config is not None and config.source_path is not None:
        folder = config.base_dir / "agents"
    suffix = ".lua" if kind == "lua" else ".md"
    target = Path(path) if path else folder / f"{name}{suffix}"
    shown = snippet_path(target, config)
    if kind == "lua":
        write_new(target, LUA_TEMPLATE.format(name=name, path=shown))
        click.echo(f"created {target}")
        click.echo("add to your config:\n")
        click.echo(f'[agents.script.{name}]\npath = "{shown}"\ntimeout = 10\n')
        click.echo(f'then: ctx agent test {name} --arg topic="getting started"')
        return
    write_new(target, MARKDOWN_TEMPLATE.format(name=name))
    click.echo(f"created {target}")
    click.echo("Markdown agents in [agents] paths (default: agents/ beside the config) are found automatically.")
    click.echo(f"then: ctx agent test {name}")


__all__ = ["agent"]
