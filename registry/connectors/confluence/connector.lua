--[[
  confluence — the pages of one Confluence space, one document each, as plain text.

    [connectors.script.wiki]
    path = "<registry>/connectors/confluence/connector.lua"
    base_url = "https://example.atlassian.net/wiki"   -- Data Center: https://confluence.example.com
    space = "ENG"
    email = "me@example.com"         -- Cloud: email + API token; leave out for a personal access token
    env = ["CONFLUENCE_TOKEN"]
    page_size = 25
    max_pages = 200                  -- requests, not Confluence pages

  Lists /rest/api/content?spaceKey=...&type=page with the storage format and follows `_links.next`.
]]

connector = {
    name = "confluence",
    description = "Pages of a Confluence space",
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

-- API ----------------------------------------------------------------------------------------

local function message_of(resp)
    local data = resp.json
    if type(data) == "table" and type(data.message) == "string" then return data.message end
    return tostring(resp.body):sub(1, 200)
end

local function get(url, headers, config)
    local max_wait = tonumber(config.max_wait) or 60
    for _ = 1, 5 do
        local resp = http.get(url, { headers = headers })
        if resp.status == 429 or resp.status == 503 then
            local wait = tonumber((resp.headers or {})["retry-after"]) or 30
            if wait > max_wait then
                fail(string.format("Confluence is rate limiting (HTTP %d, Retry-After %d s, more than max_wait "
                    .. "%d s); sync later or raise `max_wait`", resp.status, wait, max_wait))
            end
            log.warn(string.format("confluence: HTTP %d, waiting %d s", resp.status, wait))
            sleep(wait)
        elseif resp.status == 401 then
            fail("Confluence answered 401 Unauthorized: check `email` and the API token in CONFLUENCE_TOKEN "
                .. "(for a personal access token leave `email` unset)")
        elseif resp.status == 403 then
            fail("Confluence answered 403 Forbidden (" .. message_of(resp) .. "): the account cannot read "
                .. "space " .. config.space)
        elseif resp.status == 404 then
            fail("Confluence answered 404 (" .. message_of(resp) .. "): check `base_url` (Cloud sites end "
                .. "in /wiki) and `space`")
        elseif not resp.ok then
            fail("GET " .. url .. " answered HTTP " .. resp.status .. ": " .. message_of(resp))
        else
            return resp
        end
    end
    fail("Confluence kept answering 429; sync later")
end

-- The absolute URL of a `_links.next`, which is relative to the site (and may repeat its context path).
local function next_url(links, base_url)
    local nxt = type(links) == "table" and links.next or nil
    if type(nxt) ~= "string" or nxt == "" then return nil end
    if nxt:match("^https?://") then return nxt end
    local context = type(links.context) == "string" and links.context or ""
    if context ~= "" and nxt:sub(1, #context) == context and base_url:sub(-#context) == context then
        nxt = nxt:sub(#context + 1)
    end
    return base_url .. nxt
end

local function document(page, base_url, space)
    local storage = page.body and page.body.storage and page.body.storage.value or ""
    local text = render_html(storage)
    local history = type(page.history) == "table" and page.history or {}
    local version = type(page.version) == "table" and page.version or {}
    local links = type(page._links) == "table" and page._links or {}
    local author = type(history.createdBy) == "table" and history.createdBy.displayName or nil
    return {
        source_id = tostring(page.id),
        title = page.title,
        body = text ~= "" and (page.title .. "\n\n" .. text) or page.title,
        source_url = links.webui and (base_url .. links.webui) or nil,
        author = author,
        created_at = history.createdDate,
        updated_at = version.when,
        tags = { space },
        metadata = { space = space, version = version.number, id = tostring(page.id) },
    }
end

function connector.scan(config)
    if type(config.base_url) ~= "string" or not config.base_url:match("^https?://") then
        fail("set `base_url` to your Confluence's address, e.g. \"https://example.atlassian.net/wiki\"")
    end
    if type(config.space) ~= "string" or config.space == "" then
        fail("set `space` to the key of the space to index, e.g. \"ENG\"")
    end
    local token = env.get("CONFLUENCE_TOKEN")
    if not token or token == "" then
        fail("CONFLUENCE_TOKEN is not set: export your API token and list it in `env = [\"CONFLUENCE_TOKEN\"]`")
    end
    local base_url = config.base_url:gsub("/+$", "")
    local headers = { Accept = "application/json" }
    if config.email and config.email ~= "" then
        headers.Authorization = "Basic " .. base64.encode(config.email .. ":" .. token)
    else
        headers.Authorization = "Bearer " .. token
    end
    local limit = math.tointeger(tonumber(config.page_size) or 25) or 25
    local url = base_url .. "/rest/api/content?type=page&status=current&spaceKey=" .. config.space
        .. "&expand=body.storage,version,history&limit=" .. limit
    local out, requests = {}, 0
    local max_pages = tonumber(config.max_pages) or 200
    while url and requests < max_pages do
        requests = requests + 1
        local data = get(url, headers, config).json
        if type(data) ~= "table" or type(data.results) ~= "table" then
            fail("Confluence's answer has no `results` list (is `base_url` the site's address?)")
        end
        for _, page in ipairs(data.results) do out[#out + 1] = document(page, base_url, config.space) end
        url = next_url(data._links, base_url)
    end
    log.info("confluence: " .. #out .. " pages from space " .. config.space)
    return out
end

return connector
