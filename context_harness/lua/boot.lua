-- Sandbox bootstrap: runs once per runtime with the real standard library in reach, captures what
-- it needs in locals (upvalues user code cannot reach without `debug`) and builds the allow-listed
-- environment every user chunk runs in. Returns the host-facing API table.
local now, HOOK_EVERY, host_room = ...

local sethook = debug.sethook
local load_, pcall_, xpcall_, error_ = load, pcall, xpcall, error
local type_, rawget_, rawset_, select_ = type, rawget, rawset, select
local setmetatable_, getmetatable_, tostring_ = setmetatable, getmetatable, tostring
local co_create, co_resume, co_status, co_close = coroutine.create, coroutine.resume, coroutine.status, coroutine.close
local pack, unpack, huge, floor = table.pack, table.unpack, math.huge, math.floor
local string_rep, gmatch = string.rep, string.gmatch
local next_, pairs_ = next, pairs

local TIMEOUT = setmetatable_({}, { __tostring = function() return "timeout" end, __metatable = false })
local deadline = huge
local timed_out = false

-- Count hook: every HOOK_EVERY instructions, compare the monotonic clock with the deadline.
-- Once the deadline passed every hooked coroutine errors at its next tick, and every wrapper
-- that could catch an error (pcall, xpcall, coroutine.resume/wrap/close, load) re-raises it.
local function hook()
  if timed_out or now() > deadline then
    timed_out = true
    error_(TIMEOUT, 0)
  end
end

local function raise_timeout()
  timed_out = true
  error_(TIMEOUT, 0)
end

local function check(...)
  if timed_out then error_(TIMEOUT, 0) end
  return ...
end

local function hooked(f)
  local co = co_create(f)
  sethook(co, hook, "", HOOK_EVERY)
  return co
end

-- string: everything but dump; rep refuses the empty-string loop that never allocates.
local safe_string = {}
for k, v in pairs(string) do
  if k ~= "dump" then safe_string[k] = v end
end
safe_string.rep = function(s, n, sep)
  if s == "" and (sep == nil or sep == "") then
    string_rep(s, 0) -- argument checks
    return ""
  end
  return string_rep(s, n, sep)
end
local smt = getmetatable_("")
smt.__index = safe_string
smt.__metatable = false

-- table: insert/remove/move in Lua so a fake __len or a huge range runs under the hook.
local safe_table = { concat = table.concat, sort = table.sort, unpack = table.unpack, pack = table.pack }
function safe_table.insert(t, ...)
  local n = select_("#", ...)
  local pos, value = ...
  if type_(t) ~= "table" then error_("bad argument #1 to 'insert' (table expected)", 2) end
  local e = #t + 1
  if n == 1 then
    t[e] = pos
    return
  elseif n ~= 2 then
    error_("wrong number of arguments to 'insert'", 2)
  end
  if type_(pos) ~= "number" or pos < 1 or pos > e or floor(pos) ~= pos then
    error_("bad argument #2 to 'insert' (position out of bounds)", 2)
  end
  for i = e, pos + 1, -1 do t[i] = t[i - 1] end
  t[pos] = value
end
function safe_table.remove(t, pos)
  if type_(t) ~= "table" then error_("bad argument #1 to 'remove' (table expected)", 2) end
  local size = #t
  if pos == nil then pos = size end
  if type_(pos) ~= "number" or floor(pos) ~= pos then
    error_("bad argument #2 to 'remove' (number expected)", 2)
  end
  if size + 1 == pos then
    local v = t[pos]; t[pos] = nil; return v
  end
  if size == 0 and pos == 0 then return t[pos] end
  if pos < 1 or pos > size + 1 then error_("bad argument #2 to 'remove' (position out of bounds)", 2) end
  local v = t[pos]
  for i = pos, size - 1 do t[i] = t[i + 1] end
  t[size] = nil
  return v
end
function safe_table.move(a1, f, e, t, a2)
  a2 = a2 or a1
  if e >= f then
    if t > e or t <= f or a1 ~= a2 then
      for i = 0, e - f do a2[t + i] = a1[f + i] end
    else
      for i = e - f, 0, -1 do a2[t + i] = a1[f + i] end
    end
  end
  return a2
end

local env = {}

local function safe_load(chunk, name, mode, chunk_env)
  if type_(chunk) ~= "string" then return nil, "load: only string chunks are supported" end
  local fn, err = load_(chunk, name, "t", chunk_env == nil and env or chunk_env)
  return check(fn, err)
end

local function safe_setmetatable(t, mt)
  if type_(mt) == "table" and rawget_(mt, "__gc") ~= nil then
    error_("setmetatable: __gc metamethods are not allowed in scripts", 2)
  end
  return setmetatable_(t, mt)
end

local function safe_getmetatable(v)
  if type_(v) == "userdata" then return nil end
  return getmetatable_(v)
end

local function safe_pcall(f, ...)
  return check(pcall_(f, ...))
end

local function safe_xpcall(f, handler, ...)
  return check(xpcall_(f, function(e)
    if timed_out then return e end
    return handler(e)
  end, ...))
end

local safe_coroutine = {
  create = hooked,
  resume = function(co, ...) return check(co_resume(co, ...)) end,
  close = function(co) return check(co_close(co)) end,
  status = co_status, running = coroutine.running, yield = coroutine.yield,
  isyieldable = coroutine.isyieldable,
}
local function wrap_results(ok, ...)
  if timed_out then error_(TIMEOUT, 0) end
  if not ok then error_((...), 0) end
  return ...
end
function safe_coroutine.wrap(f)
  local co = hooked(f)
  return function(...) return wrap_results(co_resume(co, ...)) end
end

local safe_os = { time = os.time, clock = os.clock, date = os.date }

-- Scripts get their own copies of the library tables: replacing `math.floor` in a script changes
-- neither the runtime's real `math` (which this file reads) nor anything the host uses.
local function copy(lib)
  local t = {}
  for k, v in pairs(lib) do t[k] = v end
  return t
end

for k, v in pairs({
  assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs, select = select,
  tonumber = tonumber, tostring = tostring, type = type, rawequal = rawequal, rawget = rawget,
  rawlen = rawlen, rawset = rawset, setmetatable = safe_setmetatable, getmetatable = safe_getmetatable,
  pcall = safe_pcall, xpcall = safe_xpcall, load = safe_load, _VERSION = _VERSION,
  string = safe_string, table = safe_table, math = copy(math), utf8 = copy(utf8), coroutine = safe_coroutine,
  os = safe_os,
}) do env[k] = v end
env._G = env

-- Host functions return (status, value): "ok" -> value, "timeout" -> the sandbox timeout,
-- anything else -> a Lua error with the message (catchable by pcall).
local function host_call(status, value)
  if status == "ok" then return value end
  if status == "timeout" then raise_timeout() end
  error_(value, 2)
end

local function error_message(e)
  if type_(e) == "string" then return e end
  if type_(e) == "table" then
    local m = rawget_(e, "message") or rawget_(e, "error") or rawget_(e, 1)
    if type_(m) == "string" then return m end
    return "error object is a table"
  end
  if e == nil then return "error object is nil" end
  return "error object is a " .. type_(e)
end

-- Table arguments are measured here, in Lua, before Python sees them: a raw walk under the hook,
-- within what is left of the script's memory cap (`host_room`), so a shared-reference bomb such as
-- `json.encode` of `t = {t, t}` nested 40 times fails fast instead of expanding in the host.
-- Only size counts here (leaves of any type, cycles and depth past 50 stop the walk): the host
-- reports other problems itself, as before.
local function count(v, limits, depth, on_path)
  limits.nodes = limits.nodes - 1
  if limits.nodes < 0 then
    error_("it holds too many values (limit " .. limits.max_nodes .. ", from the script's memory_limit; " ..
           "shared tables count each time)", 0)
  end
  local t = type_(v)
  if t == "string" then
    limits.bytes = limits.bytes - #v
    if limits.bytes < 0 then error_("it is too large (limit " .. limits.max_bytes .. " bytes)", 0) end
  elseif t == "table" and depth < 50 and not on_path[v] then
    on_path[v] = true
    for k, x in next_, v do
      count(k, limits, depth + 1, on_path)
      count(x, limits, depth + 1, on_path)
    end
    on_path[v] = nil
  end
end

local function precheck(...)
  local n = select_("#", ...)
  for i = 1, n do
    local v = select_(i, ...)
    if type_(v) == "table" then
      local nodes, bytes = host_room()
      local ok, err = pcall_(count, v, { nodes = nodes, bytes = bytes, max_nodes = nodes, max_bytes = bytes }, 0, {})
      if timed_out then error_(TIMEOUT, 0) end
      if not ok then return "argument #" .. i .. " cannot be passed to the host: " .. error_message(err) end
    end
  end
end

local function wrap_host(pyfn, name)
  return function(...)
    local bad = precheck(...)
    if bad then error_(name .. ": " .. bad, 2) end
    return host_call(pyfn(...))
  end
end


local function finish(co, ok, ...)
  if timed_out then return "timeout" end
  if not ok then
    local e = ...
    if e == "not enough memory" then return "memory" end
    return "error", error_message(e)
  end
  if co_status(co) ~= "dead" then
    return "error", "coroutine.yield was called outside of a coroutine"
  end
  return "ok", select_("#", ...), ...
end

local api = {}

-- Run `fn(...)` in a fresh hooked coroutine until `limit` (monotonic seconds).
function api.run(limit, fn, ...)
  deadline, timed_out = limit, false
  local co = hooked(fn)
  return finish(co, co_resume(co, ...))
end

-- Compile user source in the sandbox env (text only: precompiled bytecode is refused).
function api.compile(source, chunkname)
  local fn, err = load_(source, chunkname, "t", env)
  if not fn then return nil, err end
  return fn
end

-- Host code below never reaches through `env` or the string metatable (`s:gmatch`): a script may
-- replace `string.gmatch`, `pairs` or `type` in its own environment, and must not make the host
-- run its replacement. Every library function the host uses is one of the locals captured above.

-- Resolve "a.b.c" in the sandbox env with raw lookups (no user metamethods run here).
function api.lookup(path)
  local v = env
  for part in gmatch(path, "[^.]+") do
    if type_(v) ~= "table" then return nil end
    v = rawget_(v, part)
  end
  return v
end

-- Compile a trusted host snippet (metadata readers): it sees the script's globals (raw), but its
-- own `type`, `rawget`, `pairs`, ... are the real ones whatever the script did to its globals.
local host_names = {
  type = type_, rawget = rawget_, rawequal = rawequal, rawlen = rawlen, next = next_, pairs = pairs_,
  ipairs = ipairs, select = select_, tostring = tostring_, tonumber = tonumber, error = error_,
}
local host_env = setmetatable_({}, { __index = function(_, k)
  local v = rawget_(host_names, k)
  if v ~= nil then return v end
  return rawget_(env, k)
end })
function api.compile_trusted(source, chunkname)
  local fn, err = load_(source, chunkname, "t", host_env)
  if not fn then return nil, err end
  return fn
end

function api.install(name, functions)
  local t = {}
  for k, f in pairs_(functions) do t[k] = wrap_host(f, name .. "." .. k) end
  env[name] = t
  return t
end

function api.install_function(name, f)
  env[name] = wrap_host(f, name)
end

function api.set(name, value) env[name] = value end
function api.host_table(functions, extra, prefix)
  local t = extra or {}
  for k, f in pairs_(functions) do t[k] = wrap_host(f, prefix .. k) end
  return t
end
function api.memory_kb() return collectgarbage("count") end

-- Is `v` JSON-like data within limits? Raw traversal (no metamethods), run under the hook, so a
-- cycle, a shared-subtable bomb, a function inside or an oversized value is refused before any
-- Python conversion starts. Raises an error whose message names the problem.
local function measure(v, limits, depth, on_path)
  local t = type_(v)
  limits.nodes = limits.nodes - 1
  if limits.nodes < 0 then
    error_("it holds too many values (limit " .. limits.max_nodes .. "; shared tables count each time)", 0)
  end
  if t == "string" then
    limits.bytes = limits.bytes - #v
    if limits.bytes < 0 then error_("it is too large (limit " .. limits.max_bytes .. " bytes)", 0) end
  elseif t == "table" then
    if on_path[v] then error_("it contains a cycle (a table inside itself)", 0) end
    if depth >= limits.max_depth then error_("it is nested deeper than " .. limits.max_depth .. " levels", 0) end
    on_path[v] = true
    for k, x in next, v do
      local kt = type_(k)
      if kt ~= "string" and kt ~= "number" and kt ~= "boolean" then
        error_("a table key is a " .. kt .. "; keys must be strings or numbers", 0)
      end
      measure(k, limits, depth + 1, on_path)
      measure(x, limits, depth + 1, on_path)
    end
    on_path[v] = nil
  elseif t == "number" then
    if v ~= v or v == huge or v == -huge then error_("it contains " .. tostring_(v) .. ", which is not a JSON number", 0) end
  elseif t ~= "boolean" and t ~= "nil" then
    error_("it contains a " .. t .. " value; use only tables, strings, numbers, booleans and nil", 0)
  end
end

function api.check(v, max_nodes, max_bytes, max_depth)
  measure(v, { nodes = max_nodes, bytes = max_bytes, max_nodes = max_nodes, max_bytes = max_bytes,
               max_depth = max_depth }, 0, {})
  return true
end

-- For connectors: which items of array `arr` are not data? Returns { [index] = message }.
function api.check_items(arr, max_nodes, max_bytes, max_depth)
  local bad = {}
  if type_(arr) ~= "table" then return bad end
  for i, item in next, arr do
    if type_(i) == "number" then
      local ok, err = pcall_(measure, item, { nodes = max_nodes, bytes = max_bytes, max_nodes = max_nodes,
                                             max_bytes = max_bytes, max_depth = max_depth }, 0, {})
      if timed_out then error_(TIMEOUT, 0) end
      if not ok then bad[i] = err end
    end
  end
  return bad
end

return api
