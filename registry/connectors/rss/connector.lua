--[[
  rss — one document per entry of an RSS 2.0 or Atom feed.

    [connectors.script.news]
    path = "<registry>/connectors/rss/connector.lua"
    url = "https://blog.example.com/feed.xml"
    max_items = 500          -- optional; entries past this are left out

  Each entry: its title, its link as the document URL, its date (RSS pubDate / Atom updated or
  published), and its text (content:encoded, description, Atom content or summary) with the HTML
  stripped. The id is the entry's guid (RSS) or id (Atom), else its link, so it stays stable.
]]

connector = {
    name = "rss",
    description = "RSS 2.0 and Atom feeds, one document per entry",
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

local function html_to_text(html)
    return (render_html(html))
end

-- XML ----------------------------------------------------------------------------------------

-- Every <tag ...>inner</tag> (or <tag .../>) in xml, in order: {attrs = "...", inner = "..."}.
local function elements(xml, tag, limit)
    local out, pos = {}, 1
    while not limit or #out < limit do
        local s, e = xml:find("<" .. tag, pos, true)
        if not s then break end
        local next_char = xml:sub(e + 1, e + 1)
        if next_char == ">" or next_char == "/" or next_char:match("%s") then
            local gt = xml:find(">", e, true)
            if not gt then break end
            if xml:sub(gt - 1, gt - 1) == "/" then
                out[#out + 1] = { attrs = xml:sub(e + 1, gt - 2), inner = "" }
                pos = gt + 1
            else
                local cs, ce = xml:find("</" .. tag .. ">", gt, true)
                if not cs then break end
                out[#out + 1] = { attrs = xml:sub(e + 1, gt - 1), inner = xml:sub(gt + 1, cs - 1) }
                pos = ce + 1
            end
        else
            pos = e + 1
        end
    end
    return out
end

local function first(xml, tag)
    return elements(xml, tag, 1)[1]
end

local function attr(attrs, name)
    return attrs:match("%f[%w:]" .. name .. '%s*=%s*"([^"]*)"') or attrs:match("%f[%w:]" .. name .. "%s*=%s*'([^']*)'")
end

-- An element's character data: CDATA sections kept as they are, entities decoded elsewhere.
local function xml_text(inner)
    local parts, pos = {}, 1
    while true do
        local s, e = inner:find("<![CDATA[", pos, true)
        if not s then break end
        parts[#parts + 1] = decode_entities(inner:sub(pos, s - 1))
        local cs, ce = inner:find("]]>", e + 1, true)
        if not cs then cs, ce = #inner + 1, #inner end
        parts[#parts + 1] = inner:sub(e + 1, cs - 1)
        pos = ce + 1
    end
    parts[#parts + 1] = decode_entities(inner:sub(pos))
    return table.concat(parts)
end

local function trim(s)
    return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

local function text_of(el)
    if not el then return nil end
    local value
    if attr(el.attrs, "type") == "xhtml" then
        value = html_to_text(el.inner)
    else
        value = html_to_text(xml_text(el.inner))
    end
    if value == "" then return nil end
    return value
end

local function raw_of(el)
    if not el then return nil end
    local value = trim(xml_text(el.inner))
    if value == "" then return nil end
    return value
end

-- Dates --------------------------------------------------------------------------------------

local MONTHS = { jan = 1, feb = 2, mar = 3, apr = 4, may = 5, jun = 6, jul = 7, aug = 8, sep = 9, oct = 10,
                 nov = 11, dec = 12 }
local ZONES = { gmt = 0, ut = 0, utc = 0, z = 0, est = -5, edt = -4, cst = -6, cdt = -5, mst = -7, mdt = -6,
                pst = -8, pdt = -7 }

-- RFC 822 ("Tue, 03 Jun 2026 09:39:21 GMT") or RFC 3339 text -> RFC 3339, or nil when unreadable.
local function feed_date(value)
    if not value then return nil end
    local iso = value:match("^%s*(%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[%.%d]*[Zz+%-]?[%d:]*)%s*$")
    if iso then return iso end
    local d, mon, y, hh, mm, ss, zone =
        value:match("(%d%d?)%s+(%a%a%a)%a*%s+(%d+)%s+(%d%d?):(%d%d):?(%d*)%s*([%+%-%w]*)")
    local month = mon and MONTHS[mon:lower()]
    if not month then return nil end
    local year = tonumber(y)
    if year < 100 then year = year + (year < 50 and 2000 or 1900) end
    local offset = "+00:00"
    if zone:match("^[%+%-]%d%d%d%d$") then
        offset = zone:sub(1, 3) .. ":" .. zone:sub(4, 5)
    elseif ZONES[zone:lower()] then
        offset = string.format("%+03d:00", ZONES[zone:lower()])
    end
    return string.format("%04d-%02d-%02dT%02d:%02d:%02d%s", year, month, tonumber(d), tonumber(hh),
        tonumber(mm), tonumber(ss) or 0, offset)
end

-- Entries ------------------------------------------------------------------------------------

local function categories(el)
    local tags = {}
    for _, c in ipairs(elements(el, "category")) do
        local term = attr(c.attrs, "term") or raw_of(c)
        if term and term ~= "" then tags[#tags + 1] = term end
    end
    return tags
end

local function atom_link(entry)
    local fallback
    for _, link in ipairs(elements(entry, "link")) do
        local rel, href = attr(link.attrs, "rel"), attr(link.attrs, "href")
        if href and (rel == nil or rel == "alternate") then return decode_entities(href) end
        fallback = fallback or (href and decode_entities(href))
    end
    return fallback
end

local function document(fields, feed_title)
    local title, text = fields.title, fields.text
    local body = text or title
    if not body then return nil end
    if title and text and not text:find(title, 1, true) then body = title .. "\n\n" .. text end
    local id = fields.id or fields.link
    if not id then id = crypto.sha256((title or "") .. "\n" .. (fields.date or "") .. "\n" .. body) end
    return {
        source_id = id, title = title, body = body, source_url = fields.link, author = fields.author,
        updated_at = fields.date, created_at = fields.created, tags = fields.tags,
        metadata = { feed = feed_title, guid = fields.id },
    }
end

local function rss_entries(xml, limit)
    local head = xml:match("^(.-)<item[%s>]") or xml
    local feed_title = raw_of(first(head, "title"))
    local docs = {}
    for _, item in ipairs(elements(xml, "item", limit)) do
        local el = item.inner
        local content = first(el, "content:encoded") or first(el, "description")
        docs[#docs + 1] = document({
            title = text_of(first(el, "title")), link = raw_of(first(el, "link")), id = raw_of(first(el, "guid")),
            text = text_of(content), author = raw_of(first(el, "dc:creator")) or raw_of(first(el, "author")),
            date = feed_date(raw_of(first(el, "pubDate")) or raw_of(first(el, "dc:date"))),
            tags = categories(el),
        }, feed_title)
    end
    return docs
end

local function atom_entries(xml, limit)
    local head = xml:match("^(.-)<entry[%s>]") or xml
    local feed_title = raw_of(first(head, "title"))
    local docs = {}
    for _, entry in ipairs(elements(xml, "entry", limit)) do
        local el = entry.inner
        local author = first(el, "author")
        docs[#docs + 1] = document({
            title = text_of(first(el, "title")), link = atom_link(el), id = raw_of(first(el, "id")),
            text = text_of(first(el, "content")) or text_of(first(el, "summary")),
            author = author and raw_of(first(author.inner, "name")) or nil,
            date = feed_date(raw_of(first(el, "updated")) or raw_of(first(el, "published"))),
            created = feed_date(raw_of(first(el, "published"))),
            tags = categories(el),
        }, feed_title)
    end
    return docs
end

function connector.scan(config)
    local url = config.url
    if type(url) ~= "string" or url == "" then
        fail("set `url` (the feed's address) in this connector's config")
    end
    local limit = tonumber(config.max_items) or 500
    local resp = http.get(url, { headers = { Accept = "application/rss+xml, application/atom+xml, application/xml;q=0.9, */*;q=0.5" } })
    if not resp.ok then
        fail("GET " .. url .. " answered HTTP " .. resp.status .. "; check `url`")
    end
    local xml = resp.body
    local docs
    if xml:find("<feed[%s>]") and not xml:find("<rss[%s>]") then
        docs = atom_entries(xml, limit)
    elseif xml:find("<rss[%s>]") or xml:find("<rdf:RDF[%s>]") or xml:find("<channel[%s>]") then
        docs = rss_entries(xml, limit)
    else
        fail(url .. " is not an RSS or Atom feed (no <rss>, <channel> or <feed> element)")
    end
    local out = {}
    for _, doc in ipairs(docs) do
        if doc then out[#out + 1] = doc end
    end
    log.info("rss: " .. #out .. " entries from " .. url)
    return out
end

return connector
