--[[
  github-issues — the issues of one GitHub repository, one document each.

    [connectors.script.issues]
    path = "<registry>/connectors/github-issues/connector.lua"
    repo = "owner/name"
    env = ["GITHUB_TOKEN"]           -- optional token: private repositories, a higher rate limit
    state = "all"                    -- open | closed | all (default all)
    comments = false                 -- true: add each issue's comments to its text (one more listing)
    include_pull_requests = false
    base_url = "https://api.github.com"   -- GitHub Enterprise: https://HOST/api/v3
    max_pages = 50                   -- 100 issues a page
    max_wait = 60                    -- seconds it may wait for a rate limit to reset

  Pages follow the Link header. A rate-limit answer (403/429 with Retry-After or
  X-RateLimit-Remaining: 0) is waited out when the wait is at most `max_wait`, else the scan fails
  saying when the limit resets.
]]

connector = {
    name = "github-issues",
    description = "Issues (and optionally comments) of a GitHub repository",
}

-- A script error with just the message (no file:line prefix): what the user reads.
local function fail(message)
    error(message, 0)
end

local function next_link(link)
    if not link then return nil end
    for url, rel in link:gmatch('<([^>]*)>%s*;%s*rel="([^"]*)"') do
        for word in rel:gmatch("%S+") do
            if word == "next" then return url end
        end
    end
    return nil
end

-- Seconds to wait when resp is a rate-limit answer, nil otherwise.
local function rate_limit_wait(resp)
    if resp.status ~= 403 and resp.status ~= 429 then return nil end
    local h = resp.headers or {}
    local retry = tonumber(h["retry-after"])
    if retry then return math.max(0, retry) end
    local reset = tonumber(h["x-ratelimit-reset"])
    if h["x-ratelimit-remaining"] == "0" and reset then
        return math.max(0, reset - os.time()) + 1
    end
    if resp.status == 429 then return 60 end
    return nil
end

local function message_of(resp)
    local data = resp.json
    if type(data) == "table" and type(data.message) == "string" then return data.message end
    return tostring(resp.body):sub(1, 200)
end

local function get(url, headers, config)
    local max_wait = tonumber(config.max_wait) or 60
    for _ = 1, 5 do
        local resp = http.get(url, { headers = headers })
        local wait = rate_limit_wait(resp)
        if not wait then
            if resp.status == 401 then
                fail("GitHub answered 401 (" .. message_of(resp) .. "): the token in GITHUB_TOKEN is invalid "
                    .. "or expired; set a valid one, or unset it for public repositories")
            elseif resp.status == 403 then
                fail("GitHub answered 403 (" .. message_of(resp) .. "): the token in GITHUB_TOKEN may not read "
                    .. config.repo)
            elseif resp.status == 404 then
                fail("GitHub answered 404 for " .. config.repo .. ": check `repo` (owner/name); a private "
                    .. "repository needs GITHUB_TOKEN")
            elseif not resp.ok then
                fail("GET " .. url .. " answered HTTP " .. resp.status .. ": " .. message_of(resp))
            end
            return resp
        end
        if wait > max_wait then
            fail(string.format("GitHub rate limit reached; it resets in %d s, more than max_wait (%d s). "
                .. "Set GITHUB_TOKEN for a higher limit, raise `max_wait`, or sync later", wait, max_wait))
        end
        log.warn(string.format("github-issues: rate limited (HTTP %d); waiting %d s", resp.status, wait))
        sleep(wait)
    end
    fail("GitHub kept answering with rate limits for " .. url .. "; sync later")
end

-- Every item of a paginated listing.
local function listing(url, headers, config)
    local out, pages = {}, 0
    local max_pages = tonumber(config.max_pages) or 50
    while url and pages < max_pages do
        pages = pages + 1
        local resp = get(url, headers, config)
        if type(resp.json) ~= "table" then
            fail("GET " .. url .. " did not answer a JSON list")
        end
        for _, item in ipairs(resp.json) do out[#out + 1] = item end
        url = next_link(resp.headers["link"])
    end
    if url then log.warn("github-issues: stopped after max_pages (" .. max_pages .. ") pages") end
    return out
end

local function comments_by_issue(base, headers, config)
    local by_issue = {}
    local url = base .. "/issues/comments?per_page=100&sort=created&direction=asc"
    for _, c in ipairs(listing(url, headers, config)) do
        local number = tonumber(tostring(c.issue_url or ""):match("/issues/(%d+)$"))
        if number then
            by_issue[number] = by_issue[number] or {}
            table.insert(by_issue[number], c)
        end
    end
    return by_issue
end

local function names(list, key)
    local out = {}
    for _, v in ipairs(list or {}) do
        if type(v) == "table" and v[key] then out[#out + 1] = v[key] end
    end
    return out
end

local function document(issue, comments, repo)
    local parts = { "# " .. issue.title }
    if issue.body and issue.body ~= "" then parts[#parts + 1] = issue.body end
    if comments and #comments > 0 then
        parts[#parts + 1] = "## Comments"
        for _, c in ipairs(comments) do
            local who = c.user and c.user.login or "someone"
            parts[#parts + 1] = "**" .. who .. "** (" .. tostring(c.created_at) .. "):\n" .. (c.body or "")
        end
    end
    return {
        source_id = repo .. "#" .. math.tointeger(issue.number),
        title = issue.title,
        body = table.concat(parts, "\n\n"),
        source_url = issue.html_url,
        author = issue.user and issue.user.login or nil,
        created_at = issue.created_at,
        updated_at = issue.updated_at,
        tags = names(issue.labels, "name"),
        metadata = {
            repo = repo, number = issue.number, state = issue.state, comments = issue.comments,
            assignees = names(issue.assignees, "login"), milestone = issue.milestone and issue.milestone.title or nil,
            closed_at = issue.closed_at, pull_request = issue.pull_request ~= nil,
        },
    }
end

function connector.scan(config)
    local repo = config.repo
    if type(repo) ~= "string" or not repo:match("^[%w%.%-_]+/[%w%.%-_]+$") then
        fail("set `repo` to the repository as owner/name, e.g. \"octocat/hello-world\"")
    end
    local base_url = (config.base_url or "https://api.github.com"):gsub("/+$", "")
    local headers = { Accept = "application/vnd.github+json", ["X-GitHub-Api-Version"] = "2022-11-28" }
    local token = env.get("GITHUB_TOKEN")
    if token and token ~= "" then headers.Authorization = "Bearer " .. token end
    local base = base_url .. "/repos/" .. repo
    local state = config.state or "all"
    local url = base .. "/issues?state=" .. state .. "&per_page=100&sort=updated&direction=desc"
    if config.since then url = url .. "&since=" .. config.since end
    local issues = listing(url, headers, config)
    local comments = config.comments and comments_by_issue(base, headers, config) or {}
    local out = {}
    for _, issue in ipairs(issues) do
        if issue.pull_request == nil or config.include_pull_requests then
            out[#out + 1] = document(issue, comments[math.tointeger(issue.number)], repo)
        end
    end
    log.info("github-issues: " .. #out .. " issues from " .. repo)
    return out
end

return connector
