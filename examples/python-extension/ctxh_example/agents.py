"""``release-notes``: drafts release notes from what the knowledge base says about a version."""

from __future__ import annotations

from typing import Any

from context_harness.extensions import AgentContext, AgentPrompt


class ReleaseNotesAgent:
    name = "release-notes"
    description = "Drafts release notes for a version from the changelog and docs in the knowledge base."
    tools = ["search", "get", "word_count"]
    arguments = [
        {"name": "version", "description": "The version to write notes for, e.g. 1.2.0", "required": True},
        {"name": "audience", "description": "Who reads the notes", "enum": ["users", "developers"],
         "default": "users"},
    ]

    def resolve(self, arguments: dict[str, Any], context: AgentContext | None) -> AgentPrompt:
        version, audience = arguments["version"], arguments["audience"]
        notes = ""
        if context is not None:
            hits = context.search({"query": f"{version} changes", "limit": 3})
            notes = "\n".join(f"- {h.get('title') or h['id']} (id {h['id']})" for h in hits)
        system = (f"You write release notes for version {version}, for {audience}. Group changes under "
                  "Added, Changed and Fixed; one line each; link the document id you took it from.")
        if notes:
            system += f"\n\nDocuments that mention this version:\n{notes}"
        return AgentPrompt(system=system, tools=list(self.tools),
                           messages=[{"role": "user", "content": f"Draft the release notes for {version}."}])
