"""The MCP clients ``ctx setup`` and ``ctx doctor`` know: where each keeps its config file on Linux,
macOS and Windows, the file's format, and the entry it expects for a stdio server. Plain data; the
merge is in ``clients``. Each location names the client's own documentation it comes from.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

PLATFORM_ENV = "CTX_SETUP_PLATFORM"  # linux, darwin or win32: whose file locations to use (tests, --print)


@dataclass(frozen=True)
class Client:
    name: str  # as on the command line
    title: str
    servers_key: str  # the top-level object (table) that maps server names to entries
    typed: bool  # whether an entry names its transport ("type": "stdio")
    project_file: str | None  # relative to the project folder; None: the client has no project scope
    format: str = "json"  # "json"; "jsonc": JSON with comments, edited in place; "toml"
    shell_env: bool = False  # started from a shell, it passes the shell's variables (else the SDK's few)


CLIENTS = {
    "claude-desktop": Client("claude-desktop", "Claude Desktop", "mcpServers", False, None),
    "claude-code": Client("claude-code", "Claude Code", "mcpServers", True, ".mcp.json", shell_env=True),
    "cursor": Client("cursor", "Cursor", "mcpServers", False, ".cursor/mcp.json"),
    # https://code.visualstudio.com/docs/copilot/reference/mcp-configuration: mcp.json, "servers"; VS Code reads
    # it as JSON with comments and trailing commas, as its settings files
    "vscode": Client("vscode", "VS Code", "servers", True, ".vscode/mcp.json", format="jsonc"),
    # https://developers.openai.com/codex/mcp: [mcp_servers.NAME] command/args/env in ~/.codex/config.toml
    # ($CODEX_HOME), or .codex/config.toml in a trusted project. It passes a short list of variables.
    "codex": Client("codex", "Codex", "mcp_servers", False, ".codex/config.toml", format="toml"),
    # https://geminicli.com/docs/tools/mcp-server/: "mcpServers" in ~/.gemini/settings.json or the project's
    # .gemini/settings.json; the file may hold comments (it is read through strip-json-comments). Servers get
    # the shell's variables, with secrets redacted.
    "gemini": Client("gemini", "Gemini CLI", "mcpServers", False, ".gemini/settings.json", format="jsonc",
                     shell_env=True),
    # https://docs.windsurf.com/windsurf/cascade/mcp: ~/.codeium/windsurf/mcp_config.json, Claude Desktop's schema.
    "windsurf": Client("windsurf", "Windsurf", "mcpServers", False, None),
    # https://zed.dev/docs/ai/mcp and https://zed.dev/docs/configuring-zed: "context_servers" in settings.json,
    # "JSON with support for // comments"; a project's .zed/settings.json.
    "zed": Client("zed", "Zed", "context_servers", False, ".zed/settings.json", format="jsonc"),
    # Cline's shared settings file (cline/cline: resolveMcpSettingsPath in sdk/packages/shared/src/storage/paths.ts),
    # read by the VS Code extension, the CLI and JetBrains; VS Code's globalStorage/saoudrizwan.claude-dev file
    # is the old location, migrated into it once (cline/cline#11818).
    "cline": Client("cline", "Cline", "mcpServers", False, None),
    # https://lmstudio.ai/docs/app/mcp: mcp.json in LM Studio's home, ~/.lmstudio (%USERPROFILE%\.lmstudio), in
    # "Cursor's mcp.json notation"; see _lm_studio_home for installs whose home is elsewhere.
    "lm-studio": Client("lm-studio", "LM Studio", "mcpServers", False, None),
}


def current_platform() -> str:
    """``linux``, ``darwin`` or ``win32``: ``$CTX_SETUP_PLATFORM`` if set, else this machine's
    (any other Unix counts as Linux: the same XDG locations)."""
    name = os.environ.get(PLATFORM_ENV) or sys.platform
    if name not in ("linux", "darwin", "win32"):
        return "linux"
    return name


def _app_data(platform: str) -> Path:
    """Where desktop apps (Electron: Claude Desktop, VS Code) keep their per-user folders."""
    home = Path.home()
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def _zed_settings(platform: str) -> Path:
    """Zed's user settings: ``~/.config/zed`` on macOS too, ``$XDG_CONFIG_HOME/zed`` on Linux,
    ``%APPDATA%\\Zed`` on Windows (https://zed.dev/docs/configuring-zed)."""
    if platform == "win32":
        return _app_data(platform) / "Zed" / "settings.json"
    if platform == "linux":
        return _app_data(platform) / "zed" / "settings.json"
    return Path.home() / ".config" / "zed" / "settings.json"


def _cline_settings() -> Path:
    """``$CLINE_MCP_SETTINGS_PATH``, else ``$CLINE_DATA_DIR/settings``, else ``~/.cline/data/settings``."""
    explicit = os.environ.get("CLINE_MCP_SETTINGS_PATH", "").strip()
    if explicit:
        return Path(explicit).expanduser().absolute()
    data = os.environ.get("CLINE_DATA_DIR", "").strip()
    folder = Path(data).expanduser() if data else Path.home() / ".cline" / "data"
    return folder / "settings" / "cline_mcp_settings.json"


def _lm_studio_home() -> Path:
    """LM Studio's home as its own tools find it (``lms``, lmstudio-js ``findLMStudioHome``): the folder named
    in ``~/.lmstudio-home-pointer``, else an older install's ``~/.cache/lm-studio`` if there is one (where
    its mcp.json is: lmstudio-ai/lmstudio-bug-tracker#1371), else ``~/.lmstudio``."""
    home = Path.home()
    try:
        named = (home / ".lmstudio-home-pointer").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        named = ""
    if named and os.path.isabs(named):
        return Path(named)
    legacy = home / ".cache" / "lm-studio"
    return legacy if legacy.is_dir() else home / ".lmstudio"


def config_file(client: Client, scope: str, platform: str, project: Path) -> Path:
    """The file ``client`` reads its MCP servers from: the user's (``scope="user"``) or the
    project's (``scope="project"``, relative to ``project``)."""
    if scope == "project":
        if client.project_file is None:
            raise ValueError(f"{client.title} has no project scope")
        return project / client.project_file
    home = Path.home()
    user_files = {
        "claude-desktop": lambda: _app_data(platform) / "Claude" / "claude_desktop_config.json",
        # CLAUDE_CONFIG_DIR moves Claude Code's whole configuration
        "claude-code": lambda: Path(os.environ.get("CLAUDE_CONFIG_DIR") or home) / ".claude.json",
        "cursor": lambda: home / ".cursor" / "mcp.json",
        "vscode": lambda: _app_data(platform) / "Code" / "User" / "mcp.json",
        "codex": lambda: Path(os.environ.get("CODEX_HOME") or home / ".codex") / "config.toml",
        "gemini": lambda: Path(os.environ.get("GEMINI_CLI_HOME") or home) / ".gemini" / "settings.json",
        "windsurf": lambda: home / ".codeium" / "windsurf" / "mcp_config.json",
        "zed": lambda: _zed_settings(platform),
        "cline": _cline_settings,
        "lm-studio": lambda: _lm_studio_home() / "mcp.json",
    }
    return user_files[client.name]()
