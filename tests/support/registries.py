"""Extension registries for the tests: real git repositories in temporary folders.

``make_registry(folder, manifest, files)`` writes ``registry.toml`` and the scripts, then commits;
``commit(folder, files)`` changes it (an update to fetch). ``SCRIPTS`` holds small tools and a
connector that use (or misuse) the host tables.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_ID = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"]


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", *GIT_ID, *args], cwd=folder, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(folder: Path, files: dict[str, str], message: str = "change") -> str:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", message)
    return git(folder, "rev-parse", "HEAD")


def make_registry(folder: Path, manifest: str, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q", "-b", "main")
    commit(folder, {"registry.toml": manifest, **files}, "first")
    return folder


FETCH_TOOL = """
tool = { name = "fetch", description = "GET a URL and return its body",
         parameters = { { name = "url", type = "string", required = true } } }
function tool.execute(params, context)
  local r = http.get(params.url)
  return { status = r.status, body = r.body }
end
return tool
"""

ENV_TOOL = """
tool = { name = "peek", description = "reads an environment variable it did not declare" }
function tool.execute(params, context)
  return { home = env.get("HOME") }
end
return tool
"""

PURE_TOOL = """
tool = { name = "shout", description = "upper-cases its text",
         parameters = { { name = "text", type = "string", required = true } } }
function tool.execute(params, context)
  if params.text == "search" then return context.search("anything") end
  return { text = string.upper(params.text), digest = crypto.sha256(params.text) }
end
return tool
"""

FEED_CONNECTOR = """
connector = { name = "feed", description = "one document per line of a text file served over HTTP" }
function connector.scan(config)
  local r = http.get(config.url)
  if not r.ok then error("GET " .. config.url .. " returned " .. r.status) end
  local items = {}
  for line in string.gmatch(r.body, "[^\\n]+") do
    local id, title, body = string.match(line, "^(%S+)|([^|]*)|(.*)$")
    table.insert(items, { source_id = id, title = title, body = body })
  end
  return items
end
return connector
"""

MANIFEST = """
[registry]
name = "community"
description = "Test extensions"

[extensions."tools/fetch"]
kind = "tool"
path = "tools/fetch/tool.lua"
description = "GET a URL"
tags = ["web"]
capabilities = ["http"]
hosts = ["127.0.0.1:{port}"]

[extensions."tools/peek"]
kind = "tool"
path = "tools/peek/tool.lua"
description = "declares http, calls env.get"
capabilities = ["http"]
hosts = ["127.0.0.1:{port}"]

[extensions."tools/shout"]
kind = "tool"
path = "tools/shout/tool.lua"
description = "pure: no capability"
tags = ["text"]

[extensions."connectors/feed"]
kind = "connector"
path = "connectors/feed/connector.lua"
description = "lines of a served text file"
tags = ["feeds"]
config = ["url"]
capabilities = ["http"]
hosts = ["{{url}}"]
"""

FILES = {"tools/fetch/tool.lua": FETCH_TOOL, "tools/peek/tool.lua": ENV_TOOL, "tools/shout/tool.lua": PURE_TOOL,
         "connectors/feed/connector.lua": FEED_CONNECTOR}


def config_text(registries: dict[str, tuple[str, str]], extra: str = "") -> str:
    """A config with a data folder, ``[lua] http_allow`` letting 127.0.0.1 through, and the registries
    ``{name: (url, tier)}``."""
    lines = ['[db]', 'path = "data/ctx.sqlite"', "", "[lua]", 'http_allow = ["127.0.0.1"]', "", "[embedding]",
             'provider = "disabled"', ""]
    for name, (url, tier) in registries.items():
        lines += [f"[registries.{name}]", f'url = "{url}"', f'tier = "{tier}"', ""]
    return "\n".join(lines) + extra
