"""``reference/errors.md``: the error table of ``context_harness/errors.py``, one row per class."""

from __future__ import annotations

import json

from context_harness.errors import OUTCOMES, HarnessError, Outcome
from devtools.markdown import GENERATED_NOTE, Undocumented, code, first_paragraph, own_doc, table


def rows() -> list[tuple[type[HarnessError], Outcome]]:
    return list(OUTCOMES.items())


def page() -> str:
    from context_harness import errors

    found = rows()
    missing = [f"{cls.__name__} (its docstring)" for cls, _ in found if not own_doc(cls)]
    if missing:
        raise Undocumented("reference/errors.md", missing, "context_harness/errors.py")
    example = errors.NotFound("no document with id 'x'; use an id returned by search").to_dict()
    out = ["# Errors reference", "", GENERATED_NOTE.format(source="`context_harness/errors.py`"), "",
           own_doc(errors), "", "Every error has the same body on every rim (REST, an MCP tool result, `--json`):",
           "", "```json", json.dumps(example), "```", "",
           "In MCP, an error whose outcome is a *tool result* comes back from `tools/call` as a result with "
           "`isError: true` and that body as its text, so the model can read it; the JSON-RPC code is used where "
           "MCP answers with a protocol error instead. A class without a row of its own takes its nearest "
           "ancestor's. The CLI exits 1 for every error of this table (one line on stderr names the fix) and "
           "2 for a usage error its option parser reports.", ""]
    body = []
    for cls, row in found:
        name, meaning = code(cls.__name__), first_paragraph(own_doc(cls))
        if cls is errors.HarnessError:  # the fallback row: the classes that take it, by their own words
            fallback = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, cls) and c is not cls
                        and not any(a in errors.OUTCOMES for a in c.__mro__[:c.__mro__.index(cls)])]
            name = ", ".join([*(code(c.__name__) for c in fallback), "any other"])
            meaning = " ".join(first_paragraph(own_doc(c)) for c in fallback) or meaning
        mcp = "tool result (`isError`)" if row.mcp_tool_error else "protocol error"
        body.append((name, code(cls.code), str(row.http_status), mcp, str(row.jsonrpc_code), meaning))
    out += [table(["class", "code", "HTTP", "MCP", "JSON-RPC", "meaning"], body), ""]
    return "\n".join(out).rstrip() + "\n"
