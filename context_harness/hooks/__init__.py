"""``ctx hook``: an assistant's sessions captured as notes and brought back at the next session's start,
through its client's hooks (Claude Code, Codex, Gemini CLI). ``events`` answers the hook events,
``digest`` makes the context a session starts with, ``transcript`` and ``sessions`` the session note,
``settings`` reads ``[hooks]`` fast, ``project`` names the project a session works on."""
