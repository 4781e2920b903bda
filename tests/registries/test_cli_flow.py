"""``ctx registry ...`` as a user runs it: add a registry's connector, sync it, search; enable a tool;
override one into the project's .ctx/. Subprocesses of the real CLI."""

from __future__ import annotations

import json

from context_harness.registries.service import starter_registry
from support.cli import run_ctx


def ok(*args: str, cwd) -> str:
    done = run_ctx(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_add_a_connector_sync_it_and_find_its_documents(project, pages) -> None:
    cwd = project.folder
    listed = ok("registry", "list", cwd=cwd)
    assert "community  [community] ../reg at " in listed
    assert "tools/fetch" in listed and "off (asks for http; `ctx registry enable tools/fetch`)" in listed
    assert "connectors/feed" in listed and "`ctx registry add connectors/feed`" in listed
    found = json.loads(ok("registry", "search", "feeds", "--json", cwd=cwd))
    assert [item["id"] for item in found] == ["connectors/feed"]
    info = ok("registry", "info", "connectors/feed", cwd=cwd)
    assert "config: url" in info and "capabilities: http" in info and "hosts: {url}" in info

    original = project.config.read_text(encoding="utf-8")
    assert "added [connectors.script.feed]" in ok("registry", "add", "connectors/feed", cwd=cwd)
    text = project.config.read_text(encoding="utf-8")
    placeholder = "# url = ...    # required: set it (its value: `ctx registry info connectors/feed`"
    assert text.startswith(original) and placeholder in text
    project.config.write_text(text.replace(placeholder, f'url = "{pages.url("feed.txt")}" #'),
                              encoding="utf-8")
    assert "script:feed: 2 added" in ok("sync", cwd=cwd)
    assert "Quokkas" in ok("search", "quokka", cwd=cwd)
    assert "[from registry community at " in ok("sources", cwd=cwd)
    again = run_ctx("registry", "add", "connectors/feed", cwd=cwd)
    assert again.returncode != 0 and "already has [connectors.script.feed]" in again.stderr


def test_enable_override_and_the_tool_list(project) -> None:
    cwd = project.folder
    assert "fetch" not in ok("tool", "list", cwd=cwd)
    assert "enabled tools/fetch: it may use http" in ok("registry", "enable", "tools/fetch", cwd=cwd)
    tools = ok("tool", "list", cwd=cwd)
    assert "fetch  [lua (" in tools and "from registry community at " in tools
    refused = run_ctx("registry", "enable", "tools/shout", cwd=cwd)
    assert refused.returncode != 0 and "needs no enabling" in refused.stderr

    assert "copied tools/shout" in ok("registry", "override", "tools/shout", cwd=cwd)
    copy = project.folder / ".ctx" / "tools" / "shout" / "tool.lua"
    copy.write_text(copy.read_text(encoding="utf-8").replace("string.upper(params.text)", '"edited"'),
                    encoding="utf-8")
    info = json.loads(ok("registry", "info", "tools/shout", "--json", cwd=cwd))
    assert info["winner"] == "project .ctx/" and info["why"].startswith("project .ctx/ overrides registry community")
    result = json.loads(ok("tool", "test", "shout", "--param", "text=hi", cwd=cwd))
    assert result["result"]["text"] == "edited"

    assert "removed [registries.community]" in ok("registry", "remove", "community", cwd=cwd)
    assert "[registries.community]" not in project.config.read_text(encoding="utf-8")
    assert "no registries configured" in ok("registry", "list", cwd=cwd)


def test_init_adds_the_starter_registry_or_says_how_to_add_one(tmp_path) -> None:
    (tmp_path / "ctx.toml").write_text('[db]\npath = "data/ctx.sqlite"\n', encoding="utf-8")
    done = run_ctx("registry", "init", cwd=tmp_path)
    if starter_registry() is None:
        assert done.returncode != 0
        assert "no starter registry" in done.stderr and "[registries.community]" in done.stderr
        return
    assert done.returncode == 0, done.stderr
    assert "added [registries.community]" in done.stdout
    assert "community  [community]" in ok("registry", "list", cwd=tmp_path)
