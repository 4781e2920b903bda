--[[
  create-github-issue — open an issue in a configured GitHub repository and return its URL.

    [tools.script.create-github-issue]
    path = "<registry>/tools/create-github-issue/tool.lua"
    repo = "owner/name"                  -- the only repository it writes to
    env = ["GITHUB_TOKEN"]               -- a token with issues: write on that repository
    base_url = "https://api.github.com"  -- GitHub Enterprise: https://HOST/api/v3
]]

tool = {
    name = "create-github-issue",
    title = "Create a GitHub issue",
    description = "Open a new issue in the GitHub repository this tool is configured for and return its URL.",
    parameters = {
        { name = "title", type = "string", required = true, description = "The issue's title" },
        { name = "body", type = "string", description = "The issue's text (Markdown)" },
        { name = "labels", type = "array", description = "Label names to add (they must exist in the repository)" },
    },
    annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
}

-- A script error with just the message (no file:line prefix): what the user reads.
local function fail(message)
    error(message, 0)
end

local function message_of(resp)
    local data = resp.json
    if type(data) ~= "table" then return tostring(resp.body):sub(1, 200) end
    local parts = { type(data.message) == "string" and data.message or "" }
    for _, e in ipairs(type(data.errors) == "table" and data.errors or {}) do
        if type(e) == "table" then
            parts[#parts + 1] = e.message or ((e.field or "?") .. " " .. (e.code or "invalid"))
        elseif type(e) == "string" then
            parts[#parts + 1] = e
        end
    end
    return table.concat(parts, "; ")
end

function tool.execute(params, context)
    local config = (context and context.config) or {}
    local repo = config.repo
    if type(repo) ~= "string" or not repo:match("^[%w%.%-_]+/[%w%.%-_]+$") then
        fail("set `repo` (owner/name) in this tool's config")
    end
    local token = env.get("GITHUB_TOKEN")
    if not token or token == "" then
        fail("GITHUB_TOKEN is not set: export a token with issues: write on " .. repo
            .. " and list it in the tool's `env = [\"GITHUB_TOKEN\"]`")
    end
    if params.title:match("^%s*$") then fail("title must not be empty") end
    local payload = { title = params.title }
    if params.body and params.body ~= "" then payload.body = params.body end
    if params.labels and #params.labels > 0 then payload.labels = params.labels end
    local base_url = (config.base_url or "https://api.github.com"):gsub("/+$", "")
    local resp = http.post(base_url .. "/repos/" .. repo .. "/issues", {
        json = payload,
        headers = { Accept = "application/vnd.github+json", ["X-GitHub-Api-Version"] = "2022-11-28",
                    Authorization = "Bearer " .. token },
        timeout = 20,
    })
    if resp.status == 401 then
        fail("GitHub answered 401 (" .. message_of(resp) .. "): GITHUB_TOKEN is invalid or expired")
    elseif resp.status == 403 then
        fail("GitHub answered 403 (" .. message_of(resp) .. "): the token may not create issues in " .. repo
            .. " (it needs issues: write), or a rate limit was hit")
    elseif resp.status == 404 then
        fail("GitHub answered 404: " .. repo .. " does not exist or the token cannot see it")
    elseif resp.status == 410 then
        fail("GitHub answered 410: issues are disabled in " .. repo)
    elseif resp.status == 422 then
        fail("GitHub refused the issue (422): " .. message_of(resp))
    elseif not resp.ok or type(resp.json) ~= "table" then
        fail("GitHub answered HTTP " .. resp.status .. ": " .. message_of(resp))
    end
    local issue = resp.json
    return { url = issue.html_url, number = issue.number, api_url = issue.url, state = issue.state }
end

return tool
