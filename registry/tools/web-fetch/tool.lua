--[[
  web-fetch — GET a web page and return its readable text: title, headings and paragraphs.

    [tools.script.web-fetch]
    path = "<registry>/tools/web-fetch/tool.lua"
    hosts = ["docs.example.com", "*.python.org"]   -- where it may fetch from (names, *.domain, IPs, URLs)
    max_chars = 20000                                -- the most text a call may return

  A URL whose host is not in `hosts` is refused before any request; `[lua] http_allow` (or the
  registry's host list) is checked as well, on every redirect.
]]

tool = {
    name = "web-fetch",
    title = "Fetch a web page",
    description = "Fetch a web page over HTTP(S) and return its readable text (title, headings, paragraphs). "
        .. "Only hosts configured for this tool can be fetched.",
    parameters = {
        { name = "url", type = "string", required = true, description = "The http:// or https:// URL to fetch" },
        { name = "max_chars", type = "integer", description = "Return at most this many characters of text" },
    },
    annotations = { readOnlyHint = true, openWorldHint = true },
}

-- A script error with just the message (no file:line prefix): what the user reads.
local function fail(message)
    error(message, 0)
end

-- Text ---------------------------------------------------------------------------------------

local ENTITIES = { amp = "&", lt = "<", gt = ">", quot = '"', apos = "'", nbsp = " ", ndash = "–",
                   mdash = "—", hellip = "…", lsquo = "‘", rsquo = "’", ldquo = "“", rdquo = "”",
                   copy = "©", reg = "®", trade = "™", middot = "·", bull = "•" }

local function codepoint(n)
    if n and n > 0 and n <= 0x10FFFF and not (n >= 0xD800 and n <= 0xDFFF) then
        return utf8.char(n)
    end
    return ""
end

local function decode_entities(s)
    s = s:gsub("&#[xX](%x+);", function(h) return codepoint(tonumber(h, 16)) end)
    s = s:gsub("&#(%d+);", function(d) return codepoint(tonumber(d)) end)
    return (s:gsub("&(%a+);", function(name) return ENTITIES[name:lower()] end))
end

local function tidy(s)
    s = s:gsub("[ \t\r\f\v]+", " "):gsub(" *\n *", "\n"):gsub("\n\n\n+", "\n\n")
    return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- Drop <tag ...> ... </tag> blocks (an unclosed one runs to the end), the name in any case.
local function drop_blocks(s, tag)
    local lower, parts, pos = s:lower(), {}, 1
    while true do
        local open = lower:find("<" .. tag .. "[%s>/]", pos)
        if not open then break end
        parts[#parts + 1] = s:sub(pos, open - 1)
        local _, close = lower:find("</" .. tag .. "%s*>", open)
        if not close then return table.concat(parts) end
        pos = close + 1
    end
    parts[#parts + 1] = s:sub(pos)
    return table.concat(parts)
end

local function inline_text(fragment)
    return tidy(decode_entities((fragment:gsub("<[^>]*>", " "))))
end

local BLOCKS = { "p", "/p", "br", "div", "/div", "li", "/li", "tr", "/tr", "/td", "/th", "section", "/section",
                 "article", "/article", "blockquote", "/blockquote", "pre", "/pre", "ul", "/ul", "ol", "/ol",
                 "table", "/table", "hr", "dt", "dd" }

-- The page's readable text, with headings marked as Markdown headings.
local function readable(html)
    local s = html:gsub("<!%-%-.-%-%->", " ")
    for _, tag in ipairs({ "script", "style", "noscript", "template", "svg", "head", "nav", "footer", "form",
                           "iframe", "button", "select" }) do
        s = drop_blocks(s, tag)
    end
    -- lower-case the tag names so the patterns below can be plain
    s = s:gsub("<(/?)(%a[%w:%-]*)", function(slash, name) return "<" .. slash .. name:lower() end)
    s = s:gsub("<h([1-6])[^>]*>(.-)</h%1%s*>", function(level, inner)
        return "\n\n" .. string.rep("#", tonumber(level)) .. " " .. inline_text(inner):gsub("\n", " ") .. "\n\n"
    end)
    s = s:gsub("(<li[^>]*>)%s*<p%f[%s>][^>]*>", "%1")  -- <li><p>item: one line
    for _, tag in ipairs(BLOCKS) do
        s = s:gsub("<" .. tag .. "[%s/>][^>]*", "\n%0")
    end
    s = s:gsub("<li[%s>]", "\n- %0")
    s = s:gsub("<[^>]*>", "")
    return tidy(decode_entities(s))
end

local function headings(html)
    local out = {}
    local lowered = html:gsub("<(/?)([hH][1-6])", function(slash, name) return "<" .. slash .. name:lower() end)
    for level, inner in lowered:gmatch("<h([1-6])[^>]*>(.-)</h%1%s*>") do
        local text = inline_text(inner):gsub("\n", " ")
        if text ~= "" then out[#out + 1] = { level = tonumber(level), text = text } end
        if #out >= 100 then break end
    end
    return out
end

local function page_title(html)
    local inner = html:match("<[tT][iI][tT][lL][eE][^>]*>(.-)</[tT][iI][tT][lL][eE]%s*>")
    return inner and inline_text(inner) or nil
end

-- Hosts --------------------------------------------------------------------------------------

local function split_url(url)
    local scheme, rest = url:match("^(%a[%w+.-]*)://(.*)$")
    if not scheme then return nil end
    local authority = rest:match("^([^/?#]*)"):gsub("^.*@", "")
    local host, port = authority:match("^%[([^%]]+)%]:?(%d*)$")
    if not host then host, port = authority:match("^([^:]+):?(%d*)$") end
    if not host or host == "" then return nil end
    scheme = scheme:lower()
    port = tonumber(port) or (scheme == "https" and 443 or 80)
    return scheme, host:lower(), port
end

-- One `hosts` entry: a URL, "*", "name", "*.domain" or an IP, each with an optional :port.
local function allows(entry, host, port)
    entry = tostring(entry):lower()
    local pattern, want_port
    if entry:find("://", 1, true) then
        local _, h, p = split_url(entry)
        pattern, want_port = h, p
    else
        local h, p = entry:match("^%[([^%]]+)%]:?(%d*)$")
        if not h then h, p = entry:match("^([^:]+):(%d+)$") end
        pattern, want_port = h or entry, tonumber(p)
    end
    if not pattern then return false end
    if want_port and want_port ~= port then return false end
    if pattern == "*" or pattern == host then return true end
    if pattern:sub(1, 2) == "*." then
        local suffix = pattern:sub(2)
        return #host > #suffix and host:sub(-#suffix) == suffix
    end
    return false
end

local function check_host(url, hosts)
    local scheme, host, port = split_url(url)
    if not scheme or (scheme ~= "http" and scheme ~= "https") then
        fail("url must be an http:// or https:// URL with a host, not " .. url:sub(1, 100))
    end
    if type(hosts) == "string" then hosts = { hosts } end
    if type(hosts) ~= "table" or #hosts == 0 then
        fail("web-fetch has no `hosts` configured: list the hosts it may fetch from in its config")
    end
    for _, entry in ipairs(hosts) do
        if allows(entry, host, port) then return end
    end
    fail("host " .. host .. " is not in this tool's `hosts`; add it to the tool's config to allow it")
end

function tool.execute(params, context)
    local config = context.config or {}
    local url = params.url
    check_host(url, config.hosts)
    local cap = tonumber(config.max_chars) or 20000
    local limit = math.min(tonumber(params.max_chars) or cap, cap)
    if limit < 1 then fail("max_chars must be at least 1") end
    local resp = http.get(url, { headers = { Accept = "text/html, text/plain;q=0.9, */*;q=0.1" }, timeout = 20 })
    if not resp.ok then
        fail("GET " .. url .. " answered HTTP " .. resp.status)
    end
    local content_type = (resp.headers["content-type"] or ""):lower()
    local body = resp.body
    local title, heads, text
    if content_type:find("html", 1, true) or (content_type == "" and body:find("<[hH][tT][mM][lL]")) then
        title, heads, text = page_title(body), headings(body), readable(body)
    elseif content_type:find("^text/") or content_type:find("json", 1, true) or content_type:find("xml", 1, true) then
        heads, text = {}, tidy(body)
    else
        fail(url .. " is not a text page (Content-Type " .. content_type .. ")")
    end
    if not utf8.len(text) then
        text = text:gsub("[\128-\255]", "?")
    end
    local truncated = utf8.len(text) > limit
    if truncated then text = text:sub(1, utf8.offset(text, limit + 1) - 1) end
    return { url = url, status = resp.status, content_type = content_type, title = title, headings = heads,
             text = text, truncated = truncated }
end

return tool
