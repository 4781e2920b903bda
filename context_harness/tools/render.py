"""The readable text of the built-in tools' results (the MCP text block beside the structured
content) and of a document (the ``ctx://documents/{id}`` resource)."""

from __future__ import annotations

import json
from typing import Any

from context_harness.models import live_state


def render_search(payload: dict[str, Any]) -> str:
    """The results as text; a ``notice`` (indexing still running, never synced) comes first."""
    results = payload.get("results", [])
    notice = [f"Note: {payload['notice']}."] if payload.get("notice") else []
    left_out = (payload.get("omitted") or {}).get("results")
    if not results and left_out:
        return "\n".join([*notice, f"No result fits in max_tokens: {left_out} left out; ask with a larger max_tokens."])
    if not results:
        return "\n".join([*notice, "No documents matched. Try other words, fewer filters, or `sources` to see "
                          "what is indexed."])
    more = f" ({left_out} more left out to fit max_tokens)" if left_out else ""
    lines = [*notice, f"{len(results)} result{'s' if len(results) != 1 else ''}{more}:"]
    for i, r in enumerate(results, 1):
        lines.append(f"{i}. {r.get('title') or r['source_id']}  [{r['source']} · {r['source_id']}]  "
                     f"score {r['score']:.3f}")
        lines.append(f"   id: {r['id']}" + (f"  chunk: {r['chunk']}" if r.get("chunk") is not None else "")
                     + (f"  ({r['heading']})" if r.get("heading") else ""))
        if r.get("date"):  # the document's own date
            lines.append(f"   date: {r['date']}")
        if r.get("updated_at"):
            lines.append(f"   updated: {r['updated_at']}")
        if r.get("snippet"):
            lines.append(f"   {' '.join(r['snippet'].split())}")
    lines.append("Call `get` with a result's id and chunk to read that section; page on with `next_offset`.")
    return "\n".join(lines)


def render_document(doc: dict[str, Any], read_on: str | None = None) -> str:
    """A document as Markdown: title, a metadata list, then the body (a window of it: then a last line
    saying which characters it holds and, ``read_on``, how to read the next part)."""
    lines = [f"# {doc.get('title') or doc['source_id']}", ""]
    fields = [("id", doc["id"]), ("source", doc["source"]), ("source_id", doc["source_id"]),
              ("url", doc.get("source_url")), ("author", doc.get("author")), ("created", doc.get("created_at")),
              ("updated", doc.get("updated_at")), ("content_type", doc.get("content_type")),
              ("version", doc.get("version"))]  # what note_edit's expected_version takes, for text-only clients
    for key, value in (doc.get("metadata") or {}).items():
        if value not in (None, "", [], {}):
            fields.append((key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    lines.extend(f"- **{k}**: {v}" for k, v in fields if v)
    lines.extend(["", "---", "", doc.get("body", "").rstrip(), ""])
    window = doc.get("range")
    if doc.get("truncated") and window:
        note = f"[characters {window['start']}-{window['end']} of {doc.get('total_chars')}"
        if doc.get("next_offset") is not None:
            note += "; to read on, " + (read_on or f"call `get` with offset {doc['next_offset']}")
        lines.extend([note + "]", ""])
    return "\n".join(lines)


def render_sources(payload: dict[str, Any]) -> str:
    sources = payload.get("sources", [])
    if not sources:
        return "No sources are configured."
    lines = []
    for s in sources:
        state = s.get("status") or ("healthy" if s["healthy"] else "unhealthy")
        if s.get("status_reason"):
            state += f" ({s['status_reason']})"
        line = (f"- {s['name']}: {s['document_count']} documents, {s['chunk_count']} chunks, {state}, "
                f"last sync {s['last_sync'] or 'never'}")
        if s.get("notes"):
            line += f" ({s['notes']})"
        line += live_state(s)
        lines.append(line)
    advice = (payload.get("embedding") or {}).get("language_advice")
    if advice:  # most documents in languages the embedding model does not read, with the line that fixes it
        lines.append(f"Note: {advice['message']}")
    return "\n".join(lines)


def render_recent(payload: dict[str, Any]) -> str:
    changes = payload.get("changes", [])
    if not changes:
        return "No changes recorded in that window."
    return "\n".join(f"- {c['at']} {c['change']}: {c.get('title') or c['source_id']}  [{c['source']} · "
                     f"{c['source_id']}]  id: {c['id']}" for c in changes)


def render_related(payload: dict[str, Any]) -> str:
    """Links out, backlinks, similar documents and unresolved links, one section each."""
    lines = [f"Related to {payload.get('title') or payload['id']} (id: {payload['id']}):"]
    for key, heading in (("links_to", "Links to"), ("linked_from", "Linked from"), ("similar", "Similar")):
        lines.append(f"{heading}:" if payload.get(key) else f"{heading}: none")
        for item in payload.get(key, []):
            extra = f"  score {item['score']:.3f}" if item.get("score") is not None else ""
            extra += f"  (link: {item['link']})" if item.get("link") else ""
            lines.append(f"- {item.get('title') or item['source_id']}  [{item['source']} · {item['source_id']}]  "
                         f"id: {item['id']}{extra}")
    if payload.get("unresolved"):
        lines.append("Unresolved links: " + ", ".join(u["target"] for u in payload["unresolved"]))
    if payload.get("note"):
        lines.append(f"Note: {payload['note']}.")
    return "\n".join(lines)


def render_result(payload: dict[str, Any]) -> str:
    """A Lua tool's ``{"result": ...}`` as text: a string as is, anything else as JSON."""
    result = payload.get("result")
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, indent=2)


__all__ = ["live_state", "render_document", "render_recent", "render_related", "render_result", "render_search",
           "render_sources"]
