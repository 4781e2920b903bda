--[[
  jira — the issues a JQL search finds, one document each (summary, description, comments).

    [connectors.script.jira]
    path = "<registry>/connectors/jira/connector.lua"
    base_url = "https://example.atlassian.net"
    jql = "project = OPS ORDER BY updated DESC"
    email = "me@example.com"         -- Jira Cloud: email + API token (basic auth);
    env = ["JIRA_TOKEN"]             -- leave `email` out for a Data Center personal access token
    page_size = 50                   -- maxResults per request (Jira caps it, often at 100)
    api = "search"                   -- "search/jql": Jira Cloud's newer search (nextPageToken paging);
                                     -- used anyway when /rest/api/2/search answers 410 Gone
    max_issues = 5000
    max_wait = 60                    -- seconds it may wait when Jira answers 429

  Pages by startAt/maxResults/total of /rest/api/2/search (plain-text descriptions), or by
  nextPageToken/isLast of /rest/api/2/search/jql.
]]

connector = {
    name = "jira",
    description = "Issues from a Jira JQL search",
}

-- A script error with just the message (no file:line prefix): what the user reads.
local function fail(message)
    error(message, 0)
end

local FIELDS = "summary,description,comment,status,issuetype,priority,labels,reporter,assignee,created,updated,project"

local function errors_of(resp)
    local data = resp.json
    if type(data) == "table" then
        local parts = {}
        for _, m in ipairs(data.errorMessages or {}) do parts[#parts + 1] = m end
        for k, m in pairs(type(data.errors) == "table" and data.errors or {}) do parts[#parts + 1] = k .. ": " .. m end
        if #parts > 0 then return table.concat(parts, "; ") end
    end
    return tostring(resp.body):sub(1, 200)
end

local function check(resp, config)
    if resp.status == 401 then
        fail("Jira answered 401 Unauthorized: check `email` and the API token in JIRA_TOKEN"
            .. " (for a Data Center personal access token leave `email` unset)")
    elseif resp.status == 403 then
        fail("Jira answered 403 Forbidden (" .. errors_of(resp) .. "): the account cannot browse these "
            .. "issues, or Jira wants a CAPTCHA after failed logins (sign in once in a browser)")
    elseif resp.status == 400 then
        fail("Jira refused the search (" .. errors_of(resp) .. "); check `jql`: " .. config.jql)
    elseif not resp.ok then
        fail("Jira answered HTTP " .. resp.status .. ": " .. errors_of(resp))
    end
end

local function search(url, params, headers, config)
    local max_wait = tonumber(config.max_wait) or 60
    for _ = 1, 5 do
        local resp = http.get(url, { headers = headers, params = params })
        if resp.status == 410 then return nil end  -- this search endpoint is gone (Jira Cloud retired it)
        if resp.status ~= 429 and resp.status ~= 503 then
            check(resp, config)
            return resp.json
        end
        local wait = tonumber((resp.headers or {})["retry-after"]) or 30
        if wait > max_wait then
            fail(string.format("Jira is rate limiting (HTTP %d, Retry-After %d s, more than max_wait %d s); "
                .. "sync later or raise `max_wait`", resp.status, wait, max_wait))
        end
        log.warn(string.format("jira: HTTP %d, waiting %d s", resp.status, wait))
        sleep(wait)
    end
    fail("Jira kept answering 429; sync later")
end

local function jira_time(value)
    if type(value) ~= "string" then return nil end
    -- 2026-01-05T10:00:00.000+0000 -> 2026-01-05T10:00:00.000+00:00
    return (value:gsub("([%+%-]%d%d)(%d%d)$", "%1:%2"))
end

local function name_of(user)
    if type(user) ~= "table" then return nil end
    return user.displayName or user.name or user.emailAddress
end

local function document(issue, base_url)
    local f = issue.fields or {}
    local parts = { issue.key .. ": " .. (f.summary or "") }
    if type(f.description) == "string" and f.description ~= "" then parts[#parts + 1] = f.description end
    local comments = type(f.comment) == "table" and f.comment.comments or {}
    if #comments > 0 then
        parts[#parts + 1] = "Comments:"
        for _, c in ipairs(comments) do
            if type(c.body) == "string" then
                parts[#parts + 1] = (name_of(c.author) or "someone") .. " (" .. tostring(c.created) .. "): " .. c.body
            end
        end
    end
    local tags = {}
    for _, l in ipairs(f.labels or {}) do tags[#tags + 1] = l end
    local status = type(f.status) == "table" and f.status.name or nil
    local kind = type(f.issuetype) == "table" and f.issuetype.name or nil
    return {
        source_id = issue.key,
        title = issue.key .. ": " .. (f.summary or ""),
        body = table.concat(parts, "\n\n"),
        source_url = base_url .. "/browse/" .. issue.key,
        author = name_of(f.reporter),
        created_at = jira_time(f.created),
        updated_at = jira_time(f.updated),
        tags = tags,
        metadata = {
            key = issue.key, status = status, type = kind, assignee = name_of(f.assignee),
            priority = type(f.priority) == "table" and f.priority.name or nil,
            project = type(f.project) == "table" and f.project.key or nil,
        },
    }
end

local function issues_of(page)
    local issues = type(page) == "table" and page.issues or nil
    if type(issues) ~= "table" then fail("Jira's search answer has no `issues` list") end
    return issues
end

-- /rest/api/2/search, paged by startAt, maxResults and total. False when the endpoint is gone.
local function by_offset(base_url, config, headers, add, wanted)
    local url, start = base_url .. "/rest/api/2/search", 0
    local size = tonumber(config.page_size) or 50
    while wanted() do
        local page = search(url, { jql = config.jql, startAt = start, maxResults = size, fields = FIELDS }, headers,
            config)
        if page == nil then return false end
        local issues = issues_of(page)
        add(issues)
        start = start + #issues
        if #issues == 0 or start >= (tonumber(page.total) or 0) then break end
    end
    return true
end

-- /rest/api/2/search/jql (Jira Cloud), paged by nextPageToken until isLast.
local function by_token(base_url, config, headers, add, wanted)
    local url, token = base_url .. "/rest/api/2/search/jql", nil
    local size = tonumber(config.page_size) or 50
    while wanted() do
        local page = search(url, { jql = config.jql, nextPageToken = token, maxResults = size, fields = FIELDS },
            headers, config)
        if page == nil then fail("Jira answered 410 Gone for " .. url .. "; check `base_url`") end
        add(issues_of(page))
        token = page.nextPageToken
        if page.isLast or type(token) ~= "string" or token == "" then break end
    end
end

function connector.scan(config)
    if type(config.base_url) ~= "string" or not config.base_url:match("^https?://") then
        fail("set `base_url` to your Jira's address, e.g. \"https://example.atlassian.net\"")
    end
    if type(config.jql) ~= "string" or config.jql == "" then
        fail("set `jql` to the search whose issues to index, e.g. \"project = OPS\"")
    end
    local token = env.get("JIRA_TOKEN")
    if not token or token == "" then
        fail("JIRA_TOKEN is not set: export your Jira API token and list it in `env = [\"JIRA_TOKEN\"]`")
    end
    local base_url = config.base_url:gsub("/+$", "")
    local headers = { Accept = "application/json" }
    if config.email and config.email ~= "" then
        headers.Authorization = "Basic " .. base64.encode(config.email .. ":" .. token)
    else
        headers.Authorization = "Bearer " .. token
    end
    local max_issues = tonumber(config.max_issues) or 5000
    local out = {}
    local function add(issues)
        for _, issue in ipairs(issues) do
            if #out < max_issues then out[#out + 1] = document(issue, base_url) end
        end
    end
    local api = config.api or "search"
    if api ~= "search" and api ~= "search/jql" then
        fail("`api` must be \"search\" (startAt paging) or \"search/jql\" (Jira Cloud's nextPageToken paging)")
    end
    if api == "search" and not by_offset(base_url, config, headers, add, function() return #out < max_issues end) then
        log.warn("jira: /rest/api/2/search is gone (HTTP 410); using /rest/api/2/search/jql")
        api = "search/jql"
    end
    if api == "search/jql" then
        by_token(base_url, config, headers, add, function() return #out < max_issues end)
    end
    log.info("jira: " .. #out .. " issues")
    return out
end

return connector
