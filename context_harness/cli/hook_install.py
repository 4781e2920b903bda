"""``ctx hook install CLIENT``: the hook entries merged into a client's settings, as ``ctx setup`` merges
an MCP server (``clients``: backup, temporary file, mode kept; ``file_edit``: comments kept).

Each client runs a hook as ``{"type": "command", "command": ..., "timeout": ...}`` in a group
``{"matcher": ..., "hooks": [...]}`` listed under the event's name in a ``hooks`` object:

- Claude Code (https://code.claude.com/docs/en/hooks): ``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR``)
  or the project's ``.claude/settings.json``; SessionStart, PreCompact, Stop; timeouts in seconds.
- Codex (https://developers.openai.com/codex/hooks): ``~/.codex/hooks.json`` (``$CODEX_HOME``) or the
  project's ``.codex/hooks.json``; the same events and shape. Codex runs a hook it does not manage only
  once the user has reviewed and trusted it (``/hooks`` in Codex).
- Gemini CLI (its docs/hooks/reference.md): ``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME``) or the
  project's ``.gemini/settings.json``, JSON with comments; SessionStart, PreCompress, SessionEnd;
  timeouts in milliseconds.

Ours is the entry whose command runs this program's ``hook`` subcommand of that event: replaced where
it stands (a second install changes nothing), any other entry of the user's kept as it is.
"""

from __future__ import annotations

import copy
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from context_harness.cli.client_table import Client
from context_harness.errors import ConfigError

COMMANDS = ("session-start", "pre-compact", "stop")
PROGRAMS = {"ctx", "context-harness", "ctx.exe", "context-harness.exe"}


@dataclass(frozen=True)
class HookClient:
    name: str
    title: str
    user_file: str  # relative to the folder named by ``home_env``, else to the home folder
    home_env: str | None
    project_file: str
    events: tuple[tuple[str, str], ...]  # (the client's event, our subcommand)
    timeouts: dict[str, int]  # seconds, by subcommand
    timeout_scale: int = 1  # 1000: the client counts milliseconds
    format: str = "json"


HOOK_CLIENTS = {
    "claude-code": HookClient("claude-code", "Claude Code", ".claude/settings.json", "CLAUDE_CONFIG_DIR",
                              ".claude/settings.json",
                              (("SessionStart", "session-start"), ("PreCompact", "pre-compact"), ("Stop", "stop")),
                              {"session-start": 10, "pre-compact": 60, "stop": 60}),
    "codex": HookClient("codex", "Codex", ".codex/hooks.json", "CODEX_HOME", ".codex/hooks.json",
                        (("SessionStart", "session-start"), ("PreCompact", "pre-compact"), ("Stop", "stop")),
                        {"session-start": 10, "pre-compact": 60, "stop": 60}),
    "gemini": HookClient("gemini", "Gemini CLI", ".gemini/settings.json", "GEMINI_CLI_HOME", ".gemini/settings.json",
                         (("SessionStart", "session-start"), ("PreCompress", "pre-compact"), ("SessionEnd", "stop")),
                         {"session-start": 10, "pre-compact": 60, "stop": 60}, timeout_scale=1000, format="jsonc"),
}


def settings_file(client: HookClient, scope: str, project: Path) -> Path:
    """The file the client reads its hooks from, for ``scope`` user or project."""
    if scope == "project":
        return project / client.project_file
    if client.home_env and os.environ.get(client.home_env):
        base = Path(os.environ[client.home_env])
        # CLAUDE_CONFIG_DIR and CODEX_HOME are the config folder itself; GEMINI_CLI_HOME stands for the home
        return base / Path(client.user_file).name if client.name != "gemini" else base / client.user_file
    return Path.home() / client.user_file


def hook_command(program: list[str], config_args: list[str], subcommand: str, client: HookClient) -> str:
    """The shell command a client runs for ``subcommand``."""
    tail = ["--client", client.name] if subcommand != "session-start" else []
    return shlex.join([*program, *config_args, "hook", subcommand, *tail])


def is_ours(command: Any, subcommand: str) -> bool:
    """Whether a hook entry's command runs this program's ``hook SUBCOMMAND``."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if "hook" not in words or subcommand not in words[words.index("hook") + 1:words.index("hook") + 2]:
        return False
    first = os.path.basename(words[0]) if words else ""
    return first in PROGRAMS or words[1:3] == ["-m", "context_harness"]


def merged(hooks: dict[str, Any], client: HookClient, commands: dict[str, str]) -> dict[str, Any]:
    """``hooks`` (the settings' ``hooks`` object) with our entry for each event: an entry of ours is
    replaced where it stands (later copies of it dropped), else a group holding it is added."""
    out = copy.deepcopy(hooks)
    for event, subcommand in client.events:
        entry = {"type": "command", "command": commands[subcommand],
                 "timeout": client.timeouts[subcommand] * client.timeout_scale}
        groups = out.get(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f'its "hooks" holds "{event}" as a {type(groups).__name__}, not a list of groups')
        placed = False
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = []
            for hook in inner:
                if isinstance(hook, dict) and is_ours(hook.get("command"), subcommand):
                    if not placed:
                        kept.append({**hook, **entry})
                        placed = True
                else:
                    kept.append(hook)
            if kept or not inner:
                kept_groups.append({**group, "hooks": kept})
        if not placed:
            kept_groups.append({"hooks": [entry]})
        out[event] = kept_groups
    return out


def plan_install(client: HookClient, path: Path, commands: dict[str, str]) -> Any:
    """A ``clients.Plan`` of the settings file with our hook entries merged in (nothing written)."""
    from context_harness.cli.clients import Plan, read_object

    table = Client(client.name, client.title, "hooks", False, client.project_file, format=client.format)
    before = read_object(path, table)
    after = copy.deepcopy(before) if before is not None else {}
    hooks = after.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f'{path} has "hooks" set to a {type(hooks).__name__}, not an object; `ctx hook install` '
                          "changed nothing")
    try:
        after["hooks"] = merged(hooks, client, commands)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.message}; `ctx hook install` changed nothing") from None
    if client.format == "json" or before == after:
        return Plan(path, before, after, table)
    return _jsonc_plan(path, before, after, table)


def _jsonc_plan(path: Path, before: dict[str, Any] | None, after: dict[str, Any], table: Client) -> Any:
    """The plan for a file with comments: each event's list set in place, every other line kept."""
    from context_harness.cli.clients import Plan
    from context_harness.cli.file_edit import EditError, set_jsonc

    old_text = path.read_text(encoding="utf-8") if before is not None else ""
    text, partial = old_text, copy.deepcopy(before or {})
    partial.setdefault("hooks", {})
    try:
        for event, groups in after["hooks"].items():
            if partial["hooks"].get(event) == groups:
                continue
            partial["hooks"][event] = groups
            text = set_jsonc(text, "hooks", event, groups, partial)
    except EditError as exc:
        raise ConfigError(f"{path} could not be edited keeping its comments ({exc}); `ctx hook install` changed "
                          "nothing") from None
    return Plan(path, before, after, table, text, old_text)
