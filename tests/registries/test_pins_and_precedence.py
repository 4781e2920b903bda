"""Pins, updates and precedence, against real git registries in temporary folders."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import ConfigError, NotFound
from context_harness.registries import service
from support.registries import commit, config_text, git, make_registry

pytestmark = pytest.mark.anyio


def _tool(text: str) -> str:
    return (f'tool = {{name = "hello", description = "{text}"}}\n'
            f'function tool.execute() return "{text}" end\nreturn tool\n')


def _manifest(capabilities: str = "[]", hosts: str = "[]") -> str:
    return ('[registry]\nname = "r"\n\n[extensions."tools/hello"]\nkind = "tool"\npath = "tools/hello.lua"\n'
            f'description = "says hello"\ncapabilities = {capabilities}\nhosts = {hosts}\n')


def test_the_pin_is_recorded_and_an_update_shows_new_capabilities_without_applying(tmp_path: Path) -> None:
    reg = make_registry(tmp_path / "reg", _manifest(), {"tools/hello.lua": _tool("v1")})
    first = git(reg, "rev-parse", "HEAD")
    cfg = tmp_path / "ctx.toml"
    cfg.write_text(config_text({"community": ("reg", "community")}), encoding="utf-8")
    service.ensure(config_mod.load_file(cfg))
    state = json.loads((tmp_path / "data" / "registries.json").read_text(encoding="utf-8"))
    assert state["pins"]["community"]["commit"] == first

    second = commit(reg, {"registry.toml": _manifest('["http"]', '["api.example.com"]'),
                          "tools/hello.lua": _tool("v2")})
    [plan] = service.update(config_mod.load_file(cfg), None, accept=False)
    assert (plan["from"], plan["to"], plan["applied"]) == (first, second, False)
    assert sorted(plan["changed"]) == ["registry.toml", "tools/hello.lua"]
    assert plan["new_asks"] == {"tools/hello": ["capability http", "host api.example.com"]}
    assert "--accept" in plan["note"]
    assert service.info(config_mod.load_file(cfg), "tools/hello")["copies"][0]["commit"] == first
    assert (tmp_path / "data" / "registries" / "community" / "tools" / "hello.lua").read_text().count("v1")

    [plan] = service.update(config_mod.load_file(cfg), "community", accept=True)
    assert plan["applied"] is True
    assert service.info(config_mod.load_file(cfg), "tools/hello")["copies"][0]["commit"] == second
    [again] = service.update(config_mod.load_file(cfg), None, accept=False)
    assert again["from"] == again["to"] == second
    with pytest.raises(NotFound, match="no \\[registries.other\\]"):
        service.update(config_mod.load_file(cfg), "other", accept=False)


def test_a_registry_must_be_a_git_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "registry.toml").write_text("", encoding="utf-8")
    cfg = tmp_path / "ctx.toml"
    cfg.write_text(config_text({"plain": ("plain", "community")}), encoding="utf-8")
    if (tmp_path / ".git").exists() or subprocess.run(["git", "rev-parse"], cwd=tmp_path,
                                                      capture_output=True).returncode == 0:
        pytest.skip("the temporary folder is inside a git repository")
    with pytest.raises(ConfigError, match="is not in a git repository; run `git init` and commit"):
        service.ensure(config_mod.load_file(cfg))


def test_auto_update_applies_a_change_that_asks_for_nothing_new(tmp_path: Path) -> None:
    reg = make_registry(tmp_path / "reg", _manifest(), {"tools/hello.lua": _tool("v1")})
    cfg = tmp_path / "ctx.toml"
    cfg.write_text(config_text({"community": ("reg", "community")}).replace(
        'tier = "community"', 'tier = "community"\nauto_update = true'), encoding="utf-8")
    service.ensure(config_mod.load_file(cfg))
    second = commit(reg, {"tools/hello.lua": _tool("v2")})
    [plan] = service.update(config_mod.load_file(cfg), None, accept=False)
    assert plan["applied"] is True and plan["to"] == second and plan["new_asks"] == {}
    commit(reg, {"registry.toml": _manifest('["env"]')})
    [plan] = service.update(config_mod.load_file(cfg), None, accept=False)
    assert plan["applied"] is False and plan["new_asks"] == {"tools/hello": ["capability env"]}
    assert "new capabilities" in plan["note"]


async def test_precedence_over_all_five_levels(tmp_path: Path) -> None:
    regs = {}
    for name, tier in [("comm", "community"), ("corp", "company"), ("me", "personal")]:
        make_registry(tmp_path / name, _manifest(), {"tools/hello.lua": _tool(f"from {name}")})
        regs[name] = (name, tier)
    project = tmp_path / "proj"
    (project / ".ctx" / "tools").mkdir(parents=True)
    (project / ".ctx" / "tools" / "hello.lua").write_text(_tool("from project"), encoding="utf-8")
    (project / "mine.lua").write_text(_tool("from config"), encoding="utf-8")
    cfg = project / "ctx.toml"
    explicit = '\n[tools.script.hello]\npath = "mine.lua"\n'
    cfg.write_text(config_text({n: (f"../{u}", t) for n, (u, t) in regs.items()}, explicit), encoding="utf-8")
    service.ensure(config_mod.load_file(cfg))

    async def winner() -> tuple[str, str]:
        config = config_mod.load_file(cfg)
        async with Harness.open(config_mod.load_file(cfg)) as harness:
            said = (await harness.call_tool("hello", {})).payload["result"]
        return said, service.info(config, "tools/hello")["why"]

    said, why = await winner()
    assert said == "from config"
    assert why.startswith("explicit [tools.script.hello] in ctx.toml overrides project .ctx/, registry me at ")
    assert why.index("registry me") < why.index("registry corp") < why.index("registry comm")
    cfg.write_text(cfg.read_text(encoding="utf-8").replace(explicit, ""), encoding="utf-8")
    assert (await winner())[0] == "from project"
    (project / ".ctx" / "tools" / "hello.lua").unlink()
    assert (await winner())[0] == "from me"
    service.remove(config_mod.load_file(cfg), "me")
    assert not (project / "data" / "registries" / "me").exists()
    assert (await winner())[0] == "from corp"
    service.remove(config_mod.load_file(cfg), "corp")
    said, why = await winner()
    assert said == "from comm" and why.endswith("is the only copy")


RESEARCHER = "---\nname: researcher\ndescription: Finds sources on a question\ntools: search, get\n---\nResearch it.\n"
HELPER = "---\nname: helper\ndescription: A project agent\ntools: search\n---\nHelp.\n"


async def test_registry_and_project_agents_are_found(tmp_path: Path) -> None:
    manifest = ('[extensions."agents/researcher"]\nkind = "agent"\npath = "agents/researcher.md"\n'
                'description = "finds sources"\n')
    make_registry(tmp_path / "reg", manifest, {"agents/researcher.md": RESEARCHER})
    ctx = tmp_path / "proj" / ".ctx"  # the layout `ctx init` makes: the config inside .ctx/, agents beside it
    (ctx / "agents").mkdir(parents=True)
    (ctx / "agents" / "helper.md").write_text(HELPER, encoding="utf-8")
    cfg = ctx / "config.toml"
    cfg.write_text(config_text({"community": ("../../reg", "community")}), encoding="utf-8")
    service.ensure(config_mod.load_file(cfg))
    async with Harness.open(config_mod.load_file(cfg)) as harness:
        assert {a.name for a in harness.agents()} == {"researcher", "helper"}
        assert harness.unavailable_agents() == []
    assert service.info(config_mod.load_file(cfg), "agents/helper")["winner"] == "project .ctx/"
