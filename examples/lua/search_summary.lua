--[[
  Example tool: search_summary — search the knowledge base and summarise what was found.

    [tools.script.search_summary]
    path = "examples/lua/search_summary.lua"
    max_chars = 400          -- optional: characters of each document to quote

  ctx tool test search_summary --param query="lua sandbox" --param limit=3
]]

tool = {
    name = "search_summary",
    description = "Search the knowledge base and return a short Markdown summary of the best matches "
        .. "(title, source, score and the opening of each document).",
    parameters = {
        { name = "query", type = "string", required = true, description = "What to look for" },
        { name = "limit", type = "integer", default = 3, description = "How many documents (1-10)" },
        { name = "mode", type = "string", default = "keyword", enum = { "keyword", "semantic", "hybrid" },
          description = "Search mode" },
        { name = "source", type = "string", description = "Only documents from this source (e.g. filesystem:docs)" },
    },
    annotations = { readOnlyHint = true, openWorldHint = false },
}

local function first_sentences(text, max_chars)
    text = (text or ""):gsub("%s+", " ")
    if #text <= max_chars then return text end
    local cut = text:sub(1, max_chars)
    local last_stop = cut:match("^.*()[.!?]%s")
    if last_stop and last_stop > max_chars / 2 then return cut:sub(1, last_stop) end
    return cut .. "…"
end

function tool.execute(params, context)
    local limit = math.max(1, math.min(params.limit, 10))
    local max_chars = tonumber(context.config.max_chars) or 400
    local results = context.search({
        query = params.query, mode = params.mode, limit = limit,
        filters = { source = params.source },
    })
    if #results == 0 then
        return { summary = "No documents match \"" .. params.query .. "\".", count = 0, documents = {} }
    end
    local lines = { "Found " .. #results .. " document(s) for \"" .. params.query .. "\":", "" }
    local documents = {}
    for i, hit in ipairs(results) do
        local ok, doc = pcall(context.get, hit.id)
        local excerpt = ok and first_sentences(doc.body, max_chars) or (hit.snippet or "")
        lines[#lines + 1] = string.format("%d. **%s** (%s, score %.2f)", i, hit.title or hit.id,
            hit.source or "?", hit.score or 0)
        lines[#lines + 1] = "   " .. excerpt
        documents[#documents + 1] = { id = hit.id, title = hit.title, source_url = hit.source_url }
    end
    return { summary = table.concat(lines, "\n"), count = #results, documents = documents }
end

return tool
