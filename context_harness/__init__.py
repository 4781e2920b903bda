"""context-harness: a local-first knowledge base for AI assistants, served over MCP."""

__version__ = "0.1.0"
