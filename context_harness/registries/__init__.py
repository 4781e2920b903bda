"""Extension registries: git repositories of Lua connectors and tools and Markdown agents, listed in a
``registry.toml`` manifest that declares what each script may use.

``manifest`` parses the manifest, ``store`` clones and pins the copies, ``resolve`` decides which copy of
an extension wins (explicit config > project ``.ctx/`` > personal > company > community), ``apply`` adds
the winners to a config with their grants (``lua/grant.py`` enforces them), and ``service`` is what the
``ctx registry`` commands call. No MCP, HTTP or CLI knowledge here.
"""
