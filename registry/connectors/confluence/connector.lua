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

-- Text ---------------------------------------------------------------------------------------

local ENTITIES = { amp = "&", lt = "<", gt = ">", quot = '"', apos = "'", nbsp = " ", ndash = "–",
                   mdash = "—", hellip = "…", lsquo = "‘", rsquo = "’", ldquo = "“", rdquo = "”" }

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

local function escape_markup(s)
    return (s:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"))
end

local BREAKS = { "br", "/p", "p", "/div", "/li", "/tr", "/th", "/td", "/blockquote", "/pre", "/ul", "/ol", "/table",
                 "/h1", "/h2", "/h3", "/h4", "/h5", "/h6", "ac:parameter", "/ac:structured-macro" }

-- Storage-format XHTML -> plain text: macro parameters dropped, code bodies (CDATA) kept as text,
-- tags removed, entities decoded, whitespace tidied.
local function storage_to_text(html)
    local s = html:gsub("<ac:parameter[^>]*>.-</ac:parameter>", " ")
    s = s:gsub("<!%[CDATA%[(.-)%]%]>", escape_markup)
    s = s:gsub("<!%-%-.-%-%->", " ")
    s = s:gsub("(<[lL][iI][^>]*>)%s*<[pP]%f[%s>][^>]*>", "%1")  -- <li><p>item: one line
    for _, tag in ipairs(BREAKS) do
        s = s:gsub("<" .. tag .. "[^>]*>", "\n")
    end
    s = s:gsub("<li[^>]*>", "\n- ")
    s = s:gsub("<[^>]*>", "")
    s = decode_entities(s)
    s = s:gsub("[ \t\r\f\v]+", " "):gsub(" *\n *", "\n"):gsub("\n\n\n+", "\n\n")
    return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

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
    local text = storage_to_text(storage)
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
