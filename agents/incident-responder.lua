--[[
  Example Lua agent: incident-responder — primes the chat with the runbooks for a service.

    [agents.script.incident-responder]
    path = "agents/incident-responder.lua"
    timeout = 10
    runbook_query = "runbook"      -- optional: words added to every runbook search
    max_runbooks = 3               -- optional: how many runbook documents to quote

  ctx agent test incident-responder --arg service=search --arg severity=sev2
]]

agent = {
    name = "incident-responder",
    description = "Incident commander for a failing service: pre-fetches the matching runbooks and "
        .. "severity policy from the knowledge base before the chat starts.",
    tools = { "search", "get" },
    skills = { "incident-triage" },
    arguments = {
        { name = "service", description = "The affected service or symptom (e.g. search, sync, index)",
          required = true },
        { name = "severity", description = "Incident severity", required = false,
          enum = { "sev1", "sev2", "sev3" }, default = "sev2" },
    },
}

local function excerpt(text, max_chars)
    text = (text or ""):gsub("%s+", " ")
    if #text <= max_chars then return text end
    return text:sub(1, max_chars) .. "..."
end

function agent.resolve(args, config, context)
    local extra = config.runbook_query or "runbook"
    local limit = math.tointeger(config.max_runbooks) or 3

    -- 1. the runbooks that mention the service
    local runbooks = context.search({ query = extra .. " " .. args.service, limit = limit })
    -- 2. the severity policy
    local policy = context.search({ query = "severity levels " .. args.severity, limit = 1 })

    local lines = {}
    for i, hit in ipairs(runbooks) do
        lines[#lines + 1] = string.format("%d. %s (id %s): %s", i, hit.title or hit.id, hit.id,
            excerpt(hit.snippet, 300))
    end
    if #lines == 0 then
        lines[1] = "No runbook mentions this service; search the knowledge base for the symptom."
    end
    local policy_text = "No severity policy found."
    if #policy > 0 then
        local doc = context.get(policy[1].id)
        policy_text = excerpt(doc.body:match("## Severity levels(.*)$") or doc.body, 800)
    end

    local system = table.concat({
        "You are the incident commander for a " .. args.severity .. " incident affecting '"
            .. args.service .. "'.",
        "Work from the runbooks below; follow their steps in order, say which step you are on, and use "
            .. "`search`/`get` to read a runbook in full before acting on it.",
        "",
        "## Relevant runbooks",
        table.concat(lines, "\n"),
        "",
        "## Severity policy",
        policy_text,
    }, "\n")

    return {
        system = system,
        messages = {
            { role = "user", content = string.format(
                "We have a %s incident on %s. Walk me through the first checks.", args.severity, args.service) },
        },
    }
end

return agent
