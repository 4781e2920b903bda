"""The YAML alias bomb (issue 55, item 4) and the other bounds of ``formats.yamlsafe``.

Nine lines of aliases to aliases ("billion laughs", 9^8 strings in 400 bytes) read in milliseconds
and blew up at the first walk over the front matter: ``ctx sync`` took 148 s and 2.4 GB before a
MemoryError, a watched folder stalled searches for seconds, ``ctx agent list`` took 42 s and 1.6 GB.
Now front matter with an alias is not front matter: a note keeps its whole text as its body (still
indexed and found), an agent file is unavailable naming the alias. Each case runs in a real
subprocess (a sync, a stdio server watching the folder, ``ctx agent list``) and must cost under
1 s and 50 MB more than the same run without the bomb (measured: ~0 s and ~1 MB).
Normal front matter reads as ``yaml.safe_load`` reads it (dates, lists, tags)."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from context_harness.formats import yamlsafe
from context_harness.formats.markdown import front_matter_tags, front_matter_time, read_front_matter, split_front_matter
from support.hostile_folders import ctx, peak_rss_mb, run_measured, serving_pid

SECONDS = 1.0  # what the bomb may add to a run
GROWTH_MB = 50.0  # what the bomb may add to a run's peak RSS


def bomb(levels: int = 8) -> str:
    """A note whose front matter holds 9^``levels`` strings through aliases (9^8: the issue's)."""
    names = "abcdefghijklmnop"[:levels]
    lines = [f'{names[0]}: &{names[0]} ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip(names, names[1:], strict=False):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "---\n" + "\n".join(lines) + "\n---\n# Laughs\n\nA note about chortles.\n"


# -- the loader --------------------------------------------------------------------------------

def test_the_bomb_is_refused_in_a_fresh_process_within_a_second_and_50_mb() -> None:
    """The walk the indexer makes over front matter (metadata, tags, dates), in a process of its own so
    its peak RSS is the bomb's alone."""
    script = (
        "import json, sys, time\n"
        "from context_harness.formats.markdown import front_matter_tags, json_safe, read_front_matter\n"
        "def hwm():\n"
        "    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')) / 1024\n"
        "text = sys.stdin.read(); before = hwm(); began = time.perf_counter()\n"
        "meta, body, refused = read_front_matter(text)\n"
        "json.dumps(json_safe(meta)); front_matter_tags(meta)\n"
        "print(json.dumps({'seconds': time.perf_counter() - began, 'growth': hwm() - before, 'refused': refused,\n"
        "                  'kept': body == text}))\n")
    done = subprocess.run([sys.executable, "-c", script], input=bomb(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["seconds"] < SECONDS and result["growth"] < GROWTH_MB, result
    assert result["refused"] == "line 3: YAML aliases (*a) are not read; write the value out instead"
    assert result["kept"], "the note keeps its whole text"
    print(f"\nalias bomb: refused in {result['seconds'] * 1000:.1f} ms, peak RSS +{result['growth']:.1f} MB")


def test_normal_front_matter_reads_as_safe_load_reads_it() -> None:
    samples = [
        "title: Shed plans\ntags: [garden, wood]\ndate: 2024-03-01\nupdated: 2024-03-02T10:20:30Z\n",
        "tags:\n  - a\n  - b\nauthor: Ann\ncount: 3\nratio: 0.5\ndraft: false\nnothing: ~\n",
        "keywords: one, two\ncreated: 2023-01-02 03:04:05\nnested: {a: [1, {b: c}]}\n",
        "base: &base {x: 1}\nother: plain\n",  # an anchor alone is harmless: kept
        "text: |\n  two\n  lines\nfolded: >\n  one\n  line\nbinary: !!binary aGVsbG8=\n",
    ]
    for sample in samples:
        assert yamlsafe.load(sample) == yaml.safe_load(sample)
    meta, body = split_front_matter(f"---\n{samples[0]}---\n# Shed\n")
    assert body == "# Shed\n" and front_matter_tags(meta) == ["garden", "wood"]
    assert front_matter_time(meta, "date") == dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    assert front_matter_time(meta, "updated") == dt.datetime(2024, 3, 2, 10, 20, 30, tzinfo=dt.UTC)


@pytest.mark.parametrize(("text", "reason"), [
    ("a: &a [1]\nb: *a\n", "line 2: YAML aliases (*a) are not read; write the value out instead"),
    ("a: &a {x: 1}\nb:\n  <<: *a\n", "line 3: YAML aliases (*a) are not read; write the value out instead"),
    ("a: " + "[" * 70 + "]" * 70 + "\n", "line 1: nested more than 64 levels deep"),
    ("a: " + "[" * 500 + "\n", "line 1: nested more than 64 levels deep"),
    ("a: " + "[" * 60_000 + "\n", "nested more than 64 levels deep"),  # libyaml's own bound (1,000) first
    ("".join(" " * i + "k:\n" for i in range(300)), "line 64: nested more than 64 levels deep"),
    ("a: " + "x" * (64 * 1024) + "\n", f"{64 * 1024 + 4:,} bytes of YAML; at most 64 KiB are read"),
    ("a: !!float nope\n", "a value YAML cannot build (ValueError)"),
])
def test_what_is_past_a_bound_is_refused_naming_it(text: str, reason: str) -> None:
    began = time.perf_counter()
    with pytest.raises(yamlsafe.Refused) as caught:
        yamlsafe.load(text)
    assert time.perf_counter() - began < SECONDS
    assert str(caught.value) == reason
    meta, body, refused = read_front_matter(f"---\n{text}---\nbody\n")
    in_file = re.sub(r"^line (\d+)", lambda m: f"line {int(m.group(1)) + 1}", reason)  # front matter starts on line 2
    assert (meta, refused) == ({}, in_file) and body.startswith("---\n")


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
                    | st.dates() | st.datetimes(timezones=st.just(dt.UTC)),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                    max_leaves=30))
def test_what_safe_load_reads_the_bounded_loader_reads_alike(value: object) -> None:
    for text in (yaml.safe_dump(value, allow_unicode=True), yaml.safe_dump(value, default_flow_style=True)):
        assert yamlsafe.load(text) == yaml.safe_load(text)


def test_the_densest_64_kib_reads_within_two_seconds() -> None:
    """0.12-0.26 s each on an idle 2-core machine (libyaml parses; the nodes are built in Python)."""
    for text in ("a: [" + ",".join(["x"] * 30_000) + "]\n", "".join(f"k{i}: v\n" for i in range(7000)),
                 "".join(f"- [{i}, {{a: b}}]\n" for i in range(4000))):
        text = text[:yamlsafe.MAX_BYTES - 8].rsplit("\n", 1)[0] + "\n" if len(text) > yamlsafe.MAX_BYTES else text
        began = time.perf_counter()
        try:
            yamlsafe.load(text)
        except yaml.YAMLError:
            pass  # cut mid-collection: not YAML, which is as slow to find
        assert time.perf_counter() - began < 2.0


def test_a_date_that_is_none_or_a_huge_integer_stays_text_instead_of_failing_the_note() -> None:
    """``date: 2024-02-30`` and an integer of 5,000 digits raised ValueError out of safe_load (not a
    YAMLError), which nothing caught."""
    meta, body = split_front_matter("---\ndate: 2024-02-30\nbig: " + "9" * 5000 + "\ntags: [x]\n---\nbody\n")
    assert meta == {"date": "2024-02-30", "big": "9" * 5000, "tags": ["x"]} and body == "body\n"


def test_what_the_console_writes_reads_back_without_aliases() -> None:
    shared = ["a", "b"]
    text = yamlsafe.dump({"skills": shared, "disabled_skills": shared, "name": "ünï"})
    assert "&" not in text and "*" not in text
    assert yamlsafe.load(text) == {"skills": ["a", "b"], "disabled_skills": ["a", "b"], "name": "ünï"}


# -- the bomb where users meet it: a sync, a watched folder, an agent file -------------------------

def workspace(root: Path, notes: dict[str, str], agents: dict[str, str] | None = None) -> Path:
    (root / "docs").mkdir()
    for name, text in notes.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    config = root / "ctx.toml"
    lines = ['[db]\npath = "data/ctx.sqlite"\n[embedding]\nprovider = "disabled"\n',
             "[server]\nsync_on_start = true\nwatch = true\n", '[connectors.filesystem.notes]\nroot = "docs"\n']
    if agents is not None:
        (root / "agents").mkdir()
        for name, text in agents.items():
            (root / "agents" / name).write_text(text, encoding="utf-8")
        lines.append('[agents]\npaths = ["agents"]\n')
    config.write_text("".join(lines), encoding="utf-8")
    return config


PLAIN = "---\ntitle: Plain\ntags: [x]\n---\nA plain note about chortles.\n"


def test_ctx_sync_indexes_the_bomb_note_as_text(tmp_path: Path, child_env: dict[str, str]) -> None:
    runs = {}
    for kind, notes in (("plain", {"plain.md": PLAIN}), ("bomb", {"plain.md": PLAIN, "laughs.md": bomb()})):
        root = tmp_path / kind
        root.mkdir()
        config = workspace(root, notes)
        runs[kind] = run_measured(ctx("sync", "--config", str(config)), root, child_env, timeout=120)
        assert runs[kind].returncode == 0 and "Traceback" not in runs[kind].stderr, runs[kind].stderr[-2000:]
        found = subprocess.run(ctx("search", "chortles", "--json", "--config", str(config)), cwd=root, env=child_env,
                               capture_output=True, text=True, timeout=60)
        assert found.returncode == 0, found.stderr
        ids = sorted(r["source_id"] for r in json.loads(found.stdout)["results"])
        assert ids == sorted(notes), f"{kind}: every note is indexed and found ({ids})"
    added = runs["bomb"].seconds - runs["plain"].seconds
    grown = runs["bomb"].peak_rss_mb - runs["plain"].peak_rss_mb
    assert added < SECONDS and grown < GROWTH_MB, f"the bomb added {added:.2f} s and {grown:.1f} MB"
    print(f"\nctx sync: {runs['plain'].seconds:.2f} s / {runs['plain'].peak_rss_mb:.0f} MB without the bomb, "
          f"{runs['bomb'].seconds:.2f} s / {runs['bomb'].peak_rss_mb:.0f} MB with it")


@pytest.mark.anyio
async def test_a_served_watched_folder_takes_the_bomb_and_searches_stay_fast(tmp_path: Path,
                                                                            child_env: dict[str, str]) -> None:
    config = workspace(tmp_path, {"plain.md": PLAIN})
    head, *rest = ctx("--config", str(config))
    async with Client(StdioServerParameters(command=head, args=rest, env=child_env)) as client:
        pid = serving_pid(config)

        async def search(query: str) -> tuple[list[str], float]:
            began = time.monotonic()
            found = await client.call_tool("search", {"query": query, "mode": "keyword", "limit": 5})
            return sorted(r["source_id"] for r in found.structured_content["results"]), time.monotonic() - began

        for _ in range(300):
            if (await search("chortles"))[0] == ["plain.md"]:
                break
            await anyio.sleep(0.1)
        before = peak_rss_mb(pid)
        (tmp_path / "docs" / "laughs.md").write_text(bomb(), encoding="utf-8")
        saved = time.monotonic()
        slowest, found_after = 0.0, None
        while time.monotonic() - saved < 3:
            ids, took = await search("chortles")
            slowest = max(slowest, took)
            if found_after is None and ids == ["laughs.md", "plain.md"]:
                found_after = time.monotonic() - saved
            await anyio.sleep(0.02)
        grown = peak_rss_mb(pid) - before
    assert found_after is not None and found_after < 2.0, "the bomb note is indexed, as text, within a second or so"
    assert slowest < 0.5, f"a search took {slowest:.2f} s (4.2 s before the fix)"
    assert grown < GROWTH_MB, f"the server's peak RSS grew {grown:.1f} MB"
    print(f"\nserved: the bomb note found after {found_after:.2f} s, slowest search {slowest * 1000:.0f} ms, "
          f"peak RSS +{grown:.1f} MB")


def test_ctx_agent_list_reports_the_bomb_agent_unavailable(tmp_path: Path, child_env: dict[str, str]) -> None:
    reviewer = "---\nname: reviewer\ndescription: Reviews notes\ntools: search\n---\nYou review notes.\n"
    laughing = bomb().replace("---\n", "---\nname: laughing\ndescription: Laughs\n", 1)
    runs = {}
    for kind, agents in (("plain", {"reviewer.md": reviewer}), ("bomb", {"reviewer.md": reviewer,
                                                                         "laughing.md": laughing})):
        root = tmp_path / kind
        root.mkdir()
        config = workspace(root, {"plain.md": PLAIN}, agents)
        runs[kind] = run_measured(ctx("agent", "list", "--config", str(config)), root, child_env, timeout=120)
        assert runs[kind].returncode == 0 and "Traceback" not in runs[kind].stderr, runs[kind].stderr[-2000:]
        assert "reviewer" in runs[kind].stdout
    listed = runs["bomb"].stdout + runs["bomb"].stderr
    assert "laughing" in listed and "its front matter was not read (line 5: YAML aliases (*a) are not read" in listed
    added = runs["bomb"].seconds - runs["plain"].seconds
    grown = runs["bomb"].peak_rss_mb - runs["plain"].peak_rss_mb
    assert added < SECONDS and grown < GROWTH_MB, f"the bomb added {added:.2f} s and {grown:.1f} MB"
    print(f"\nctx agent list: {runs['plain'].seconds:.2f} s / {runs['plain'].peak_rss_mb:.0f} MB without the bomb, "
          f"{runs['bomb'].seconds:.2f} s / {runs['bomb'].peak_rss_mb:.0f} MB with it")


def test_an_agent_or_skill_file_past_a_mebibyte_is_not_read(tmp_path: Path) -> None:
    from context_harness.agents.skills import load_skill
    from context_harness.agents.sources import markdown_spec
    from context_harness.errors import ConfigError

    huge = "---\nname: big\n---\n" + "x" * (1024 * 1024)
    (tmp_path / "big.md").write_text(huge, encoding="utf-8")
    (tmp_path / "SKILL.md").write_text(huge, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"agent file .*big\.md: 1,048,594 bytes; an agent file may hold at most "):
        markdown_spec(tmp_path / "big.md")
    with pytest.raises(ConfigError, match=r"skill .*SKILL\.md: 1,048,594 bytes; a skill file may hold at most "):
        load_skill(tmp_path / "SKILL.md")
