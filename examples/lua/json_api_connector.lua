--[[
  Example connector: json_api — ingest items from a paginated JSON API.

    [connectors.script.json_api]
    path = "examples/lua/json_api_connector.lua"
    url = "https://api.example.com/articles"   -- returns {"items": [...], "next": "<url or null>"}
    token = "${JSON_API_TOKEN:-}"               -- optional bearer token
    max_pages = 10

  Each API item: {id, title, body, author, url, tags, updated_at, created_at}.
  ctx connector test json_api   then   ctx sync script:json_api
]]

connector = {
    name = "json_api",
    description = "Documents from a paginated JSON API",
}

function connector.scan(config)
    assert(config.url, "set `url` in [connectors.script.<name>]")
    local headers = { ["Accept"] = "application/json" }
    if config.token and config.token ~= "" then
        headers["Authorization"] = "Bearer " .. config.token
    end
    local items, url, pages = {}, config.url, 0
    local max_pages = tonumber(config.max_pages) or 10
    while url and pages < max_pages do
        pages = pages + 1
        local resp = http.get(url, { headers = headers, timeout = 30 })
        if not resp.ok then
            error("GET " .. url .. " returned HTTP " .. resp.status)
        end
        local page = resp.json or json.parse(resp.body)
        for _, entry in ipairs(page.items or {}) do
            items[#items + 1] = {
                source_id = tostring(entry.id),
                title = entry.title,
                body = entry.body,
                author = entry.author,
                source_url = entry.url,
                tags = entry.tags,
                created_at = entry.created_at,
                updated_at = entry.updated_at,
                metadata = { api_page = pages },
            }
        end
        url = page.next
    end
    log.info("json_api: " .. #items .. " items from " .. pages .. " page(s)")
    return items
end

return connector
