"""Sandboxed Lua: runtime, host APIs, Lua tools and Lua connectors."""
