"""Leaf helpers every layer may use: no imports of ours but ``errors``/``models`` (secrets scrubbed from
text, timestamps, passages of a body, links, deadlines, pipes, memory, argument validation)."""
