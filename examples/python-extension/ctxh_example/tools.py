"""``word_count``: a tool with a JSON Schema, truthful annotations and an async ``call``."""

from __future__ import annotations

from typing import Any

from context_harness.extensions import BadRequest


class WordCount:
    name = "word_count"
    description = "Count the words and characters of a text (e.g. to keep release notes short)."
    title = "Count words"
    input_schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to measure"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    output_schema = {
        "type": "object",
        "properties": {"words": {"type": "integer"}, "characters": {"type": "integer"}},
        "required": ["words", "characters"],
    }
    annotations = {"readOnlyHint": True, "openWorldHint": False}
    builtin = False

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        text = (arguments or {}).get("text")
        if not isinstance(text, str):
            raise BadRequest("text: required string")
        extra = sorted(set(arguments) - {"text"})
        if extra:
            raise BadRequest(f"{extra[0]}: unknown argument")
        return {"words": len(text.split()), "characters": len(text)}
