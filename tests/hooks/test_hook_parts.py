"""The parts of ``ctx hook`` in process: transcripts of Codex and Gemini CLI, the quick read of ``[hooks]``
against the validated config, and the merge of hook entries into a client's settings."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.cli.hook_install import HOOK_CLIENTS, is_ours, merged
from context_harness.config.hooks import HooksConfig
from context_harness.errors import ConfigError
from context_harness.hooks.sessions import decisions
from context_harness.hooks.settings import HookSettings, from_config, quick
from context_harness.hooks.transcript import read_transcript
from support.workspace import Workspace


def jsonl(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_codex_rollout_names_what_was_asked_answered_and_patched(tmp_path: Path) -> None:
    patch = "*** Begin Patch\n*** Update File: src/cache.py\n@@\n-a\n+b\n*** Add File: docs/cache.md\n+x\n*** End Patch"
    path = jsonl(tmp_path / "rollout.jsonl",
                 {"timestamp": "2026-12-01T09:00:00Z", "type": "session_meta",
                  "payload": {"id": "0199-codex", "cwd": "/work/widgetry"}},
                 {"timestamp": "2026-12-01T09:00:01Z", "type": "response_item",
                  "payload": {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}},
                 {"timestamp": "2026-12-01T09:00:02Z", "type": "response_item",
                  "payload": {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": "Cache the widget lookups"}]}},
                 {"timestamp": "2026-12-01T09:00:05Z", "type": "response_item",
                  "payload": {"type": "custom_tool_call", "name": "apply_patch", "input": patch}},
                 {"timestamp": "2026-12-01T09:00:09Z", "type": "response_item",
                  "payload": {"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": "We'll keep an LRU of 512 entries."}]}})
    got = read_transcript(path)
    assert (got.session_id, got.cwd) == ("0199-codex", "/work/widgetry")
    assert got.asks == ["Cache the widget lookups"] and got.files == ["src/cache.py", "docs/cache.md"]
    assert (got.started, got.ended) == ("2026-12-01T09:00:00Z", "2026-12-01T09:00:09Z")
    assert decisions(got) == ["We'll keep an LRU of 512 entries."]


def test_a_gemini_cli_session_keeps_the_last_copy_of_each_message(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "session-2026-12-02T10-00-abcd.jsonl",
                 {"sessionId": "gem-1", "projectHash": "h", "startTime": "2026-12-02T10:00:00Z"},
                 {"id": "m1", "timestamp": "2026-12-02T10:00:01Z", "type": "user",
                  "content": [{"text": "Rename the quux module"}]},
                 {"id": "m2", "timestamp": "2026-12-02T10:00:03Z", "type": "gemini", "content": "Renaming."},
                 {"id": "m2", "timestamp": "2026-12-02T10:00:03Z", "type": "gemini", "content": "Renaming it.",
                  "toolCalls": [{"name": "write_file", "args": {"file_path": "/w/quux_new.py"}}]},
                 {"$set": {"lastUpdated": "2026-12-02T10:00:04Z"}})
    got = read_transcript(path)
    assert got.session_id == "gem-1" and got.asks == ["Rename the quux module"]
    assert got.replies == ["Renaming it."] and got.files == ["/w/quux_new.py"]
    legacy = tmp_path / "session-old.json"
    legacy.write_text(json.dumps({"sessionId": "gem-0", "projectHash": "h", "messages": [
        {"id": "a", "timestamp": "2026-11-30T08:00:00Z", "type": "user", "content": "Old question"}]}),
        encoding="utf-8")
    assert read_transcript(legacy).asks == ["Old question"]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ctx.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_quick_read_has_the_validated_configs_defaults() -> None:
    fields = {k: v for k, v in asdict(HookSettings(db_path=Path("x"))).items() if k in HooksConfig.model_fields}
    assert fields == HooksConfig().model_dump()


def test_the_quick_read_agrees_with_the_validated_config(tmp_path: Path) -> None:
    path = write(tmp_path, '[db]\npath = "data/kb.sqlite"\n[retrieval]\ntitle_boost = 0.5\n'
                 '[connectors.filesystem.notes]\nroot = "notes"\nlanguage = "DE"\nwritable = true\n'
                 '[hooks]\ninbox = "filesystem:notes"\nbudget_tokens = 900\nfolder = "log"\npinned_tag = "top"\n'
                 'recent_days = 3\n')
    assert quick(path) == from_config(config_mod.load_file(path))
    assert quick(path) == HookSettings(db_path=(tmp_path / "data" / "kb.sqlite").resolve(), budget_tokens=900,
                                       inbox="filesystem:notes", folder="log", pinned_tag="top", recent_days=3,
                                       title_boost=0.5, languages={"filesystem:notes": "de"})


@pytest.mark.parametrize("text", [
    '[db]\npath = "${DATA}/kb.sqlite"\n',  # a variable: the validated config expands it
    '[db]\nbackend = "postgres"\nurl = "postgresql://x"\n',
    '[hooks]\nbudget = 10\n',  # an unknown key: the validated config says so
    '[hooks]\nbudget_tokens = 5\n',  # out of range
    '[hooks]\ninbox = "git:repo"\n',
    '[hooks]\nbudget_tokens = true\n',
])
def test_the_quick_read_leaves_what_it_cannot_read_exactly_to_the_validated_config(tmp_path: Path,
                                                                                  text: str) -> None:
    assert quick(write(tmp_path, text)) is None


def test_a_bad_hooks_key_is_an_error_of_the_validated_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="budget_tokens"):
        config_mod.load_file(write(tmp_path, "[hooks]\nbudget_tokens = 5\n"))


def test_the_merge_replaces_our_entry_where_it_stands_and_keeps_the_users() -> None:
    claude = HOOK_CLIENTS["claude-code"]
    old = "/old/venv/bin/ctx --config /kb.toml hook stop"
    hooks = {"Stop": [{"hooks": [{"type": "command", "command": "say done"}, {"type": "command", "command": old,
                                                                              "timeout": 5, "async": True}]},
                      {"hooks": [{"type": "command", "command": old}]}]}
    commands = {s: f"/new/bin/context-harness --config /kb.toml hook {s}" for s in ("session-start", "pre-compact",
                                                                                     "stop")}
    once = merged(hooks, claude, commands)
    assert once["Stop"] == [{"hooks": [{"type": "command", "command": "say done"},
                                       {"type": "command", "command": commands["stop"], "timeout": 60,
                                        "async": True}]}]
    assert merged(once, claude, commands) == once
    assert set(once) == {"SessionStart", "PreCompact", "Stop"}
    assert not is_ours("python3 my_hook.py hook stop", "stop") and is_ours(old, "stop")
    assert is_ours("/usr/bin/python3 -m context_harness hook session-start", "session-start")


@pytest.mark.anyio
async def test_the_digest_finds_pinned_notes_by_a_tag_in_any_case_and_script(workspace: Workspace) -> None:
    from context_harness.core.harness import Harness
    from context_harness.hooks.events import start_context

    workspace.write("a.md", "---\ntags: [ÉPINGLÉ]\n---\n# Accented pin\n\nKept on top.\n")
    workspace.write("b.md", "---\ntags: [Épinglé, misc]\n---\n# Second pin\n\nAlso on top.\n")
    workspace.write("c.md", "---\ntags: [epingle]\n---\n# Not a pin\n\nAn unaccented tag is another tag.\n")
    workspace.write("d.md", "# Plain\n\nNothing pinned here.\n")
    workspace.write_config('[hooks]\npinned_tag = "épinglé"\n')
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
    settings = quick(workspace.config_path)
    assert settings is not None and settings.pinned_tag == "épinglé"
    context = start_context({"cwd": str(workspace.root)}, settings)
    pinned = context.split("## Pinned notes\n", 1)[1].split("\n\n", 1)[0]
    assert [line.split("**")[1] for line in pinned.splitlines()] == ["Accented pin", "Second pin"]


def test_what_the_client_put_before_the_prompt_is_not_what_was_asked(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "session.jsonl",
                 {"sessionId": "gem-2", "projectHash": "h", "startTime": "2026-12-03T10:00:00Z"},
                 {"$set": {"messages": [{"id": "s", "timestamp": "2026-12-03T10:00:00Z", "type": "user",
                                         "content": [{"text": "<session_context>\nworkspace\n</session_context>"}]}]}},
                 {"id": "u", "timestamp": "2026-12-03T10:00:01Z", "type": "user",
                  "content": [{"text": "<hook_context># From the knowledge base\n- pinned</hook_context>\n\nhi"}]})
    assert read_transcript(path).asks == ["hi"]


def test_a_session_keeps_the_path_of_its_note_once_written(tmp_path: Path) -> None:
    from context_harness.hooks.project import project_of
    from context_harness.hooks.sessions import note_path
    from context_harness.hooks.transcript import Transcript

    project = project_of(str(tmp_path / "widgetry"))
    fresh = note_path("sessions", project, Transcript(), "abcd1234-ffff", tmp_path)
    assert fresh.startswith("sessions/widgetry/20") and fresh.endswith("-abcd1234.md")  # today, until a record
    (tmp_path / "sessions" / "widgetry").mkdir(parents=True)
    (tmp_path / "sessions" / "widgetry" / "2026-11-30-abcd1234.md").write_text("x", encoding="utf-8")
    later = Transcript(started="2026-12-01T00:00:00Z")
    assert note_path("sessions", project, later, "abcd1234-ffff", tmp_path) == "sessions/widgetry/2026-11-30-abcd1234.md"


@pytest.mark.anyio
async def test_session_start_imports_no_pydantic_config_or_model(workspace: Workspace) -> None:
    """What keeps it fast (benchmarks/hooks.py): a plain config is read without the validated ``Config``."""
    import subprocess
    import sys

    from context_harness.core.harness import Harness

    workspace.write("a.md", "---\ntags: [pinned]\n---\n# Pinned\n\nOn top.\n")
    async with Harness.open(workspace.config()) as harness:
        await harness.sync()
    watched = ("pydantic", "context_harness.config", "onnxruntime", "context_harness.embedding.bundled")
    probe = ("import sys, atexit\nfrom context_harness.cli import main\n"
             f"atexit.register(lambda: print('LOADED', [m for m in {watched!r} if m in sys.modules]))\n"
             f"sys.argv = ['ctx', '--config', {str(workspace.config_path)!r}, 'hook', 'session-start']\nmain()\n")
    done = subprocess.run([sys.executable, "-c", probe], input=json.dumps({"cwd": str(workspace.root)}),
                          capture_output=True, text=True, timeout=60)
    assert done.stderr == "" and "Pinned" in done.stdout, done.stderr
    assert done.stdout.rstrip().endswith("LOADED []"), done.stdout[-300:]
