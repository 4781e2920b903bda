"""What `tools/list` costs a client's context: bytes and estimated tokens for 5, 10 and 20 tools.

    .venv/bin/python benchmarks/tool_list.py [--validations 300]

Writes a small workspace into a temp folder and serves it over stdio (``python -m context_harness``), as a
desktop client starts it, in three shapes:

- ``5``: the default tools (search, get, sources, recent, related);
- ``10``: plus the five note tools (a writable folder);
- ``20``: plus agents (agent_list, agent_get, agent_inject) and Lua tools (the shipped examples and the
  test suite's ``modes`` tool, under several names) to reach 20.

Each shape is served with ``[server] output_schemas`` on (the default) and off. Figures per run: the bytes
of the ``tools/list`` JSON-RPC result as the server sends it (compact JSON), its estimated tokens (the
server's own estimate, ``common.text.estimate_tokens``), and the bytes of its ``outputSchema``s. On a
version without the ``output_schemas`` key the "off" runs are null.

``search_validation_us``: a 12-result ``search`` answered over the same pipe, validated against the
``outputSchema`` that ``tools/list`` advertised the way the MCP Python SDK client does (a compiled
validator, ``iter_errors`` + ``best_match``): median microseconds per validation.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from context_harness.common.text import estimate_tokens

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "lua"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
MODES_TOOL = """
tool = {
  description = "Modes for tests",
  parameters = {
    { name = "mode", type = "string", required = true, enum = { "ok", "error" } },
    { name = "n", type = "integer", default = 2 },
  },
}
function tool.execute(params, context) return { mode = params.mode, n = params.n } end
"""
# Lua tools for the 20-tool shape: (name, script) — the shipped examples, then copies to reach 20.
LUA_TOOLS = [("echo", "echo.lua"), ("search_summary", "search_summary.lua"), ("modes", "modes"),
             ("echo_upper", "echo.lua"), ("summary_short", "search_summary.lua"), ("modes_two", "modes")]


def write_workspace(root: Path, docs: int = 30) -> None:
    """``docs`` notes that all mention "harness" (so a 12-result search is possible), a writable folder,
    a Lua tool file and an agent."""
    (root / "docs").mkdir()
    for i in range(docs):
        (root / "docs" / f"note{i:02}.md").write_text(
            f"# Note {i}\n\nThe harness keeps note {i} about topic {i % 7}: searching, reading and linking "
            f"documents in a local knowledge base, with [[note{(i + 1) % docs:02}]] next.\n", encoding="utf-8")
    (root / "notes").mkdir()
    (root / "tools").mkdir()
    (root / "tools" / "modes.lua").write_text(MODES_TOOL, encoding="utf-8")


def config_text(root: Path, shape: int, output_schemas: bool) -> str:
    """The ctx.toml of one shape (5, 10 or 20 tools)."""
    server = "sync_on_start = false\n" + ("" if output_schemas else "output_schemas = false\n")
    text = (f'[db]\npath = "data/ctx.sqlite"\n\n[embedding]\nprovider = "disabled"\n\n[server]\n{server}\n'
            '[connectors.filesystem.docs]\nroot = "docs"\n')
    if shape >= 10:
        text += '\n[connectors.filesystem.notes]\nroot = "notes"\nwritable = true\n'
    if shape >= 20:
        text += '\n[agents.reader]\ndescription = "Reads the notes"\ntools = ["search", "get"]\n' \
                'system_prompt = "Answer from the notes."\n'
        for name, script in LUA_TOOLS:
            path = (root / "tools" / "modes.lua") if script == "modes" else (EXAMPLES / script)
            text += f'\n[tools.script.{name}]\npath = {json.dumps(path.as_posix())}\n'
    return text


class Peer:
    """A raw JSON-RPC peer over a stdio server (no client library between us and the bytes)."""

    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "context_harness", "--config", str(config)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 1

    def request(self, method: str, params: dict[str, Any], *before: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """Send ``before`` messages and the request; its response and the raw line it came in."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request_id, self.next_id = self.next_id, self.next_id + 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.proc.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in (*before, message)))
        self.proc.stdin.flush()
        while True:
            raw = self.proc.stdout.readline()
            if not raw:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"the server closed stdout: {err[-2000:]}")
            answer = json.loads(raw)
            if answer.get("id") == request_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer, raw
            if answer.get("id") == 0 and "error" in answer:
                raise RuntimeError(f"initialize: {answer['error']}")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def compact(value: Any) -> str:
    """JSON as the server writes it (pydantic's ``model_dump_json``: no spaces, UTF-8 as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sync(config: Path) -> None:
    """``ctx sync`` by the same Python and package as the servers (not whatever ``ctx`` is on PATH)."""
    subprocess.run([sys.executable, "-c", "from context_harness.cli import main; main()", "--config", str(config),
                    "sync"], check=True, capture_output=True)


def write_config(root: Path, shape: int, output_schemas: bool) -> Path:
    config = root / f"ctx-{shape}-{'on' if output_schemas else 'off'}.toml"
    config.write_text(config_text(root, shape, output_schemas), encoding="utf-8")
    return config


def listing(root: Path, shape: int, output_schemas: bool) -> tuple[dict[str, Any] | None, Peer | None]:
    """The ``tools/list`` result of one shape, and the peer still serving it (None, None when this
    version refuses the config, i.e. has no ``output_schemas`` key)."""
    config = write_config(root, shape, output_schemas)
    peer = Peer(config)
    answer, _ = peer.request("tools/list", {}, INIT, INITIALIZED)
    result: dict[str, Any] = answer["result"]
    if not any(tool["name"] == "recent" for tool in result["tools"]):  # a config it refused: problem mode
        peer.close()
        if output_schemas:
            raise RuntimeError(f"the server refused {config.name}: {compact(result)[:500]}")
        return None, None
    return result, peer


def figures(result: dict[str, Any]) -> dict[str, Any]:
    text = compact(result)
    schemas = [tool["outputSchema"] for tool in result["tools"] if "outputSchema" in tool]
    return {"tools": len(result["tools"]), "bytes": len(text.encode()), "tokens": estimate_tokens(text),
            "output_schema_bytes": sum(len(compact(s).encode()) for s in schemas)}


def validation_us(peer: Peer, schema: dict[str, Any], rounds: int) -> dict[str, Any]:
    """A 12-result search validated as the MCP Python SDK client does, timed."""
    from jsonschema import exceptions
    from jsonschema.validators import validator_for
    from referencing import Registry

    answer, _ = peer.request("tools/call", {"name": "search", "arguments": {"query": "harness notes", "limit": 12,
                                                                            "mode": "keyword"}})
    payload = answer["result"]["structuredContent"]
    cls = validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema, registry=Registry())
    error = exceptions.best_match(validator.iter_errors(payload))
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        exceptions.best_match(validator.iter_errors(payload))
        times.append((time.perf_counter() - start) * 1e6)
    return {"results": len(payload["results"]), "valid": error is None, "median_us": round(statistics.median(times)),
            "schema_bytes": len(compact(schema).encode())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--validations", type=int, default=300, help="timed validations of the search result")
    args = parser.parse_args()
    out: dict[str, Any] = {"benchmark": "tool_list"}
    with tempfile.TemporaryDirectory(prefix="ctx-toollist-") as tmp:
        root = Path(tmp)
        write_workspace(root)
        sync(write_config(root, 5, True))
        for shape in (5, 10, 20):
            for on in (True, False):
                result, peer = listing(root, shape, on)
                key = f"tools_{shape}_{'on' if on else 'off'}"
                out[key] = figures(result) if result is not None else None
                if peer is None:
                    continue
                try:
                    if shape == 5 and on:
                        search = next(tool for tool in result["tools"] if tool["name"] == "search")  # type: ignore[index]
                        out["search_validation"] = validation_us(peer, search["outputSchema"], args.validations)
                finally:
                    peer.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
