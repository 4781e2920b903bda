"""Writing notes into writable sources: safe paths (``paths``), atomic replaces (``atomic``) and the
pure text edits (``edits``). No MCP, HTTP or command-line knowledge here."""
