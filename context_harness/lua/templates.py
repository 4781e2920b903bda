"""Starter scripts for ``ctx tool init NAME`` and ``ctx connector init NAME``.

Both run as generated (a test loads and calls them). ``render_*`` return the script text;
``config_snippet`` the TOML a user adds to ``ctx.toml``. Writing files is the CLI's job.
"""

from __future__ import annotations

import re

from context_harness.errors import BadRequest

NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

TOOL_TEMPLATE = '''\
--[[
  Context Harness tool: {name}

  Add to ctx.toml:

    [tools.script.{name}]
    path = "{path}"
    # timeout = 30           -- seconds (default 30)
    # greeting = "Hello"     -- any other key reaches the script as context.config.greeting

  Try it:

    ctx tool test {name} --param text="hello world"

  Host APIs: http.get/post/put/patch/delete, json.parse/encode, env.get, log.info/warn/error,
  fs.read/list (this folder only), base64.encode/decode, crypto.sha256/hmac_sha256, sleep.
  context.search(query, {{mode=, limit=, source=}}), context.get(id), context.sources().
]]

tool = {{
    name = "{name}",
    description = "TODO: say what this tool does and when the model should call it",
    parameters = {{
        {{ name = "text", type = "string", required = true, description = "Text to work on" }},
        {{ name = "limit", type = "integer", default = 3, description = "How many related documents" }},
    }},
    -- Declare only what is true: a tool that changes nothing may say readOnlyHint = true.
    annotations = {{ readOnlyHint = true }},
}}

function tool.execute(params, context)
    local greeting = context.config.greeting or "Hello"
    local related = {{}}
    local ok, results = pcall(context.search, params.text, {{ limit = params.limit }})
    if ok then
        for _, r in ipairs(results) do
            table.insert(related, {{ id = r.id, title = r.title, score = r.score }})
        end
    else
        log.warn("search failed: " .. tostring(results))
    end
    return {{ message = greeting .. ", " .. params.text, related = related }}
end

return tool
'''

CONNECTOR_TEMPLATE = '''\
--[[
  Context Harness connector: {name}

  Add to ctx.toml:

    [connectors.script.{name}]
    path = "{path}"
    # url = "https://api.example.com/items"
    # api_token = "${{{env}_API_TOKEN}}"
    # timeout = 300          -- seconds (default 300)

  Then: ctx connector test {name}   and   ctx sync script:{name}

  Each item: source_id and body are required; title, author, source_url, content_type,
  metadata (table), tags (array), created_at / updated_at (RFC 3339 or unix seconds) optional.
]]

connector = {{
    name = "{name}",
    description = "TODO: describe what this connector ingests",
}}

function connector.scan(config)
    local items = {{}}
    if not config.url then
        -- No API configured yet: one sample document so the template runs as generated.
        table.insert(items, {{
            source_id = "welcome",
            title = "Welcome to {name}",
            body = "Set `url` in [connectors.script.{name}] to fetch real items.",
            updated_at = os.time(),
        }})
        return items
    end

    local headers = {{ ["Accept"] = "application/json" }}
    if config.api_token then headers["Authorization"] = "Bearer " .. config.api_token end
    local resp = http.get(config.url, {{ headers = headers }})
    if not resp.ok then
        error("GET " .. config.url .. " returned HTTP " .. resp.status)
    end
    for _, entry in ipairs(resp.json or {{}}) do
        table.insert(items, {{
            source_id = tostring(entry.id),
            title = entry.title,
            body = entry.body or entry.content or "",
            source_url = entry.url,
            updated_at = entry.updated_at,
        }})
    end
    log.info("fetched " .. #items .. " items")
    return items
end

return connector
'''


def _check(name: str) -> None:
    if not NAME.match(name):
        raise BadRequest(f"{name!r} is not a valid name: use letters, digits, '_', '.', '-' (at most 64)")


def render_tool(name: str, path: str | None = None) -> str:
    _check(name)
    return TOOL_TEMPLATE.format(name=name, path=path or f"tools/{name}.lua")


def render_connector(name: str, path: str | None = None) -> str:
    _check(name)
    env = re.sub(r"[^A-Za-z0-9]", "_", name).upper()
    return CONNECTOR_TEMPLATE.format(name=name, path=path or f"connectors/{name}.lua", env=env)


def config_snippet(kind: str, name: str, path: str) -> str:
    """``kind`` is ``tools`` or ``connectors``."""
    _check(name)
    return f'[{kind}.script.{name}]\npath = "{path}"\n'
