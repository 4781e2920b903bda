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

-- HTML: begin (the same block in connectors/rss, connectors/confluence and tools/web-fetch) ----------

local ENTITIES = { amp = "&", lt = "<", gt = ">", quot = '"', apos = "'", nbsp = " ", ndash = "–",
                   mdash = "—", hellip = "…", lsquo = "‘", rsquo = "’", ldquo = "“", rdquo = "”",
                   laquo = "«", raquo = "»", copy = "©", reg = "®", trade = "™", middot = "·", bull = "•",
                   deg = "°", times = "×", euro = "€", pound = "£" }

local function codepoint(n)
    if n and n > 0 and n <= 0x10FFFF and not (n >= 0xD800 and n <= 0xDFFF) then
        return utf8.char(n)
    end
    return ""
end

local function decode_entities(s)
    s = s:gsub("&#[xX](%x+);", function(h) return codepoint(tonumber(h, 16)) end)
    s = s:gsub("&#(%d+);", function(d) return codepoint(tonumber(d)) end)
    return (s:gsub("&(%a+);", function(name) return ENTITIES[name] or ENTITIES[name:lower()] end))
end

local function tidy(s)
    s = s:gsub("[ \t\r\f\v]+", " "):gsub(" ?\n ?", "\n"):gsub("\n\n\n+", "\n\n")
    return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- Elements dropped with everything in them, and elements that end a line.
local DROP = { script = true, style = true, noscript = true, template = true, svg = true, head = true,
               nav = true, footer = true, form = true, iframe = true, button = true, select = true,
               ["ac:parameter"] = true }
local BLOCK = { br = true, p = true, div = true, tr = true, ul = true, ol = true, dl = true, dt = true, dd = true,
                table = true, blockquote = true, pre = true, hr = true, section = true, article = true,
                header = true, main = true, aside = true, figure = true, figcaption = true, address = true,
                ["ac:structured-macro"] = true, ["ac:task"] = true, ["ac:layout-section"] = true }
local CELL = { td = true, th = true }

-- Markup -> readable text, in one pass over its tags (linear whatever the input holds): dropped
-- elements vanish with their content, blocks become line breaks, list items "- " lines, headings
-- Markdown "#" lines; comments go, CDATA stays as text, entities are decoded. Returns the text, the
-- <title> and the headings ({level, text}).
local function render_html(html)
    local out, headings, title = {}, {}, nil
    local pos, n = 1, #html
    local dropping, heading_at, fresh_item = nil, nil, false
    local function emit(s)
        if dropping or s == "" then return end
        if fresh_item and s:find("%S") then fresh_item = false end
        out[#out + 1] = s
    end
    local function escaped(s)
        return (s:gsub("&", "&amp;"):gsub("<", "&lt;"))
    end
    while pos <= n do
        local lt = html:find("<", pos, true)
        emit(html:sub(pos, (lt or n + 1) - 1))
        if not lt then break end
        pos = lt + 1
        if html:sub(lt, lt + 3) == "<!--" then
            local _, e = html:find("-->", lt + 4, true)
            pos = (e or n) + 1
        elseif html:sub(lt, lt + 8) == "<![CDATA[" then
            local s, e = html:find("]]>", lt + 9, true)
            emit(escaped(html:sub(lt + 9, (s or n + 1) - 1)))
            pos = (e or n) + 1
        elseif html:find("^<[!?]", lt) then
            local _, e = html:find(">", lt, true)
            pos = (e or n) + 1
        else
            local slash, name = html:match("^<(/?)([%a][%w:%-]*)", lt)
            local gt = name and html:find(">", lt, true)
            if not name then
                emit("&lt;")  -- a "<" in the text
            elseif not gt then
                break  -- a tag that never ends: the rest is not text
            else
                pos = gt + 1
                name = name:lower()
                local closing, level = slash == "/", tonumber(name:match("^h([1-6])$"))
                if name == "title" and not closing and not title and (not dropping or dropping == "head") then
                    local cs, ce = html:find("</[tT][iI][tT][lL][eE]%s*>", gt)
                    if cs then
                        title = tidy(decode_entities(html:sub(gt + 1, cs - 1)))
                        pos = ce + 1
                    end
                elseif dropping then
                    if closing and name == dropping then dropping = nil end
                elseif closing then
                    if level and heading_at then
                        local text = tidy(decode_entities(table.concat(out, "", heading_at)))
                        if text ~= "" and #headings < 200 then headings[#headings + 1] = { level = level, text = text } end
                        heading_at = nil
                        emit("\n\n")
                    elseif BLOCK[name] or name == "li" then
                        emit("\n")
                    elseif CELL[name] then
                        emit(" ")
                    end
                elseif DROP[name] or name == "title" then
                    if html:sub(gt - 1, gt - 1) ~= "/" then dropping = name end
                elseif level then
                    emit("\n\n" .. string.rep("#", level) .. " ")
                    heading_at = #out + 1
                elseif name == "li" then
                    emit("\n- ")
                    fresh_item = true
                elseif (BLOCK[name] and not fresh_item) or name == "br" then
                    emit("\n")
                elseif CELL[name] then
                    emit(" ")
                end
            end
        end
    end
    return tidy(decode_entities(table.concat(out))), title, headings
end

-- HTML: end --------------------------------------------------------------------------------------

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
    local config = (context and context.config) or {}
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
        text, title, heads = render_html(body)
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
