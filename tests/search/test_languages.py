"""Keyword search in every script, through the Harness and MCP over a real Tantivy index (issue 48):
CJK by character pairs, Thai by words, stemming in the document's language, nothing dropped."""

from __future__ import annotations

import random

import pytest
from mcp import Client

from context_harness import config as config_mod
from context_harness.core.harness import Harness
from context_harness.errors import ConfigError
from context_harness.models import SearchRequest
from context_harness.server.mcp import build_server

pytestmark = pytest.mark.anyio

CHINESE = "我们的发布流程需要先在预发布环境中完成回归测试。"
# 10,000 characters of CJK without a space: common Han characters, shuffled with a fixed seed
RUN = "".join(random.Random(48).choice([chr(c) for c in range(0x4E00, 0x4E00 + 3000)]) for _ in range(10_000))
LATIN_TOKEN = "".join("abcdefghijklmnopqrstuvwxyz0123456789"[(i * 7) % 36] for i in range(200))
THAI = "ภาษาไทยเป็นภาษาที่สวยงามและมีประวัติศาสตร์ยาวนาน"


@pytest.fixture
async def kb(workspace):
    workspace.write("release.md", f"# 发布\n\n{CHINESE}\n")
    workspace.write("run.md", f"# Long 串\n\n{RUN}\n")
    workspace.write("token.md", f"# Token\n\nThe key is {LATIN_TOKEN} and nothing else.\n")
    workspace.write("thai.md", f"# ไทย\n\n{THAI}\n")
    workspace.write("korean.md", "# 학생\n\n우리는 학교에서 한국어를 공부합니다. 선생님은 친절합니다.\n")
    workspace.write("english.md", "# Runners\n\nThe runners were running quickly through the parks of the city.\n")
    workspace.write("mixed.md", "# Mixed\n\nThe deployment checklist lists every step. "
                                "部署清单列出了每一个步骤。 Die Checkliste nennt jeden Schritt.\n")
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        yield h


async def titles(h: Harness, query: str) -> list[str]:
    return [r.title for r in (await h.search(SearchRequest(query=query, mode="keyword", limit=20))).results]


async def test_chinese_words_find_the_note_through_mcp(kb) -> None:
    async with Client(build_server(kb)) as client:
        for query in ("发布流程", "回归测试"):
            found = (await client.call_tool("search", {"query": query, "mode": "keyword"})).structured_content
            assert [r["title"] for r in found["results"]][:1] == ["发布"], query
            assert query in found["results"][0]["snippet"]


async def test_any_two_adjacent_characters_of_a_long_run_find_it(kb) -> None:
    for pos in [0, 1, 4_999, 9_998, *random.Random(7).sample(range(10_000 - 1), 12)]:
        assert "Long 串" in await titles(kb, RUN[pos:pos + 2]), pos
    found = (await kb.search(SearchRequest(query=RUN[6_000:6_004], mode="keyword"))).results
    assert found[0].title == "Long 串"
    assert RUN[6_000:6_004] in found[0].snippet and len(found[0].snippet) < 400  # a window, not the whole run


async def test_a_200_character_token_is_found(kb) -> None:
    assert await titles(kb, LATIN_TOKEN) == ["Token"]
    assert await titles(kb, f'"{LATIN_TOKEN}"') == ["Token"]


async def test_thai_is_found_by_a_word(kb) -> None:
    assert await titles(kb, "ประวัติศาสตร์") == ["ไทย"]
    assert await titles(kb, "สวยงาม") == ["ไทย"]


async def test_korean_noun_finds_it_with_its_particle(kb) -> None:
    assert await titles(kb, "학교") == ["학생"]  # the text says 학교에서


async def test_english_is_stemmed_as_before(kb) -> None:
    assert await titles(kb, "run") == ["Runners"]
    assert await titles(kb, "park") == ["Runners"]


async def test_a_mixed_note_is_found_in_each_of_its_languages(kb) -> None:
    for query in ("deployment steps", "部署清单", "Checkliste"):
        assert (await titles(kb, query))[:1] == ["Mixed"], query


async def test_chinese_phrase_query(kb) -> None:
    assert await titles(kb, '"发布流程"') == ["发布"]
    assert await titles(kb, '"流程发布"') == []  # the same characters, not in this order
    assert await titles(kb, '"预发布环境"') == ["发布"]


async def test_german_source_is_stemmed_as_german(workspace) -> None:
    workspace.write_config('language = "de"\n')  # into [connectors.filesystem.docs]
    workspace.write("haus.md", "# Stadt\n\nDie Häuser der Altstadt sind alt.\n")
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        assert await titles(h, "Haus") == ["Stadt"]
        assert await titles(h, "Häusern") == ["Stadt"]


async def test_german_is_detected_without_a_setting(workspace) -> None:
    workspace.write("haus.md", "# Stadt\n\nDie Häuser der Altstadt sind sehr alt und stehen am Fluss.\n")
    workspace.write("house.md", "# Town\n\nThe houses of the old town are very old and stand by the river.\n")
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        assert await titles(h, "Haus") == ["Stadt"]
        assert await titles(h, "house") == ["Town"]  # English still stemmed as English


async def test_changing_a_source_language_reindexes(workspace) -> None:
    workspace.write("haus.md", "# Stadt\n\nHäuser\n")  # too short to tell: not German-stemmed
    async with Harness.open(workspace.config()) as h:
        await h.sync()
    workspace.write_config('language = "de"\n')
    async with Harness.open(workspace.config()) as h:
        await h.sync()
        assert await titles(h, "Haus") == ["Stadt"]


def test_an_unknown_language_is_a_clear_config_error(workspace) -> None:
    workspace.write_config('language = "klingon"\n')
    with pytest.raises(ConfigError, match="language") as caught:
        config_mod.load_file(workspace.config_path)
    assert "klingon" in str(caught.value) and '"auto"' in str(caught.value)
