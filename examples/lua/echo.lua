--[[
  Example tool: echo

    [tools.script.echo]
    path = "examples/lua/echo.lua"
    prefix = "echo: "        -- optional; reaches the script as context.config.prefix

  ctx tool test echo --param text=hello --param repeat=2
]]

tool = {
    name = "echo",
    description = "Echo the given text back, optionally repeated or upper-cased. Useful to test the connection.",
    parameters = {
        { name = "text", type = "string", required = true, description = "Text to echo" },
        { name = "repeat", type = "integer", default = 1, description = "How many times to repeat it" },
        { name = "case", type = "string", default = "keep", enum = { "keep", "upper", "lower" },
          description = "Change the letter case" },
    },
    annotations = { readOnlyHint = true, idempotentHint = true, openWorldHint = false },
}

function tool.execute(params, context)
    if params["repeat"] < 1 or params["repeat"] > 100 then
        error("repeat must be between 1 and 100")
    end
    local parts = {}
    for i = 1, params["repeat"] do parts[i] = params.text end
    local text = table.concat(parts, " ")
    if params.case == "upper" then text = text:upper() elseif params.case == "lower" then text = text:lower() end
    return { echo = (context.config.prefix or "") .. text, length = #text }
end

return tool
