"""Keyword search in every language, on every backend (issue 48): the embedded index (Tantivy), and
PostgreSQL both ways, its replicas' own Tantivy index (``keyword_index = "replica"``, the default)
and BM25 in SQL (``keyword_index = "database"``). All index the terms of ``common/analysis.py``, so a
word of any script is found by its words, and the same query ranks the same documents first."""

from __future__ import annotations

import random

import anyio
import pytest

from context_harness.core.harness import Harness
from context_harness.embedding import fake
from context_harness.models import SearchRequest
from context_harness.store.schema import POSTGRES_SCHEMA_VERSION
from support.workspace import Workspace, backend_config

pytestmark = pytest.mark.anyio

KINDS = ["embedded", "postgres", "postgres-sql"]

CHINESE = "我们的发布流程需要先在预发布环境中完成回归测试。"
JAPANESE = "東京の会議では新しい検索エンジンについて話し合いました。"
KOREAN = "우리는 학교에서 한국어 문법을 공부했습니다. 선생님은 친절했습니다."
THAI = "ระบบค้นหาข้อมูลของเราทำงานได้รวดเร็วมาก และรองรับภาษาไทยอย่างถูกต้อง"
GERMAN = ("Die alten Häuser am Fluss wurden im letzten Jahr renoviert. Die Bewohner der Häuser waren sehr "
          "zufrieden mit den Arbeiten, und die Stadt plant weitere Renovierungen in der Altstadt.")
ENGLISH = "The release process requires regression tests in the staging environment before shipping."
RUSSIAN = ("Библиотеки города получили новые книги. Читатели приходят в библиотеку каждый день и берут "
           "книги домой.")
CORPUS = {"zh.md": f"# 发布说明\n\n{CHINESE}\n", "ja.md": f"# 会議\n\n{JAPANESE}\n", "ko.md": f"# 학교\n\n{KOREAN}\n",
          "th.md": f"# ระบบ\n\n{THAI}\n", "de.md": f"# Häuser\n\n{GERMAN}\n", "en.md": f"# Release\n\n{ENGLISH}\n",
          "ru.md": f"# Библиотека\n\n{RUSSIAN}\n"}


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(kind: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("pg_url") if kind != "embedded" else None


async def ready(h: Harness) -> None:
    """A replica's own index complete (until then it answers in SQL: both are tested)."""
    await h.search(SearchRequest(query="start", mode="keyword"))
    for _ in range(200):
        if getattr(h.index, "ready", True):
            return
        await anyio.sleep(0.05)


async def found(h: Harness, query: str, limit: int = 10) -> list[str]:
    return [r.source_id for r in (await h.search(SearchRequest(query=query, mode="keyword", limit=limit))).results]


async def test_every_script_is_found_by_its_words(workspace: Workspace, kind: str, url: str | None) -> None:
    fake.register()
    for name, text in CORPUS.items():
        workspace.write(name, text)
    async with Harness.open(backend_config(workspace, kind, url)) as h:
        await h.sync()
        await ready(h)
        for query, name in [("发布流程", "zh.md"), ("回归测试", "zh.md"), ("検索エンジン", "ja.md"),
                            ("학교", "ko.md"), ("문법", "ko.md"), ("ค้นหา", "th.md"), ("ภาษาไทย", "th.md"),
                            ("Haus", "de.md"), ("Renovierung", "de.md"), ("библиотека", "ru.md"),
                            ("regression testing", "en.md")]:
            assert (await found(h, query))[:1] == [name], (kind, query)
        assert await found(h, "流程发布测试预") == ["zh.md"]  # bigrams: any order of its words still matches
        assert await found(h, "zyzzyva") == []
        db = getattr(h.store, "db", None)
        if kind == "postgres-sql" and db is not None:  # the languages present come in the ranking's one read
            reads: list[bool] = []
            read = db.read
            db.read = lambda work, point=False: reads.append(point) or read(work, point)
            assert h.index is not None and [hit.doc_id for hit in h.index.search("发布流程", None, 5)]
            assert reads == [False]


async def test_words_a_stemmer_empties_are_indexed_as_written(workspace: Workspace, kind: str,
                                                                url: str | None) -> None:
    """Snowball reduces Greek "όταν", Turkish "ları" and a run of Arabic tatweel to nothing: the empty
    term made PostgreSQL refuse the whole batch ("syntax error in tsvector"; XQuAD ar, el and tr did
    not sync). Such a word is indexed as written and found by itself."""
    fake.register()
    workspace.write("el.md", "# Ελληνικά\n\nΌταν η βροχή σταματήσει, τα ίδια παιδιά παίζουν στον κήπο της γειτονιάς.\n")
    workspace.write("tr.md", "# Türkçe\n\nBilim insanları DNA'ları inceledi ve sonuçları yayımladı bu yıl.\n")
    workspace.write("ar.md", "# عربي\n\nذهب الطلاب إلى المكتبة ــــ لقراءة الكتب الجديدة في المساء.\n")
    async with Harness.open(backend_config(workspace, kind, url)) as h:
        await h.sync()
        await ready(h)
        assert (await found(h, "όταν"))[:1] == ["el.md"]
        assert (await found(h, "DNA'ları"))[:1] == ["tr.md"]
        assert (await found(h, "المكتبة"))[:1] == ["ar.md"]


async def test_phrases_in_chinese_and_korean(workspace: Workspace, kind: str, url: str | None) -> None:
    """A quoted phrase is required in order: its characters adjacent, not merely present."""
    fake.register()
    workspace.write("zh.md", f"# 发布说明\n\n{CHINESE}\n")
    workspace.write("zh2.md", "# 测试\n\n测试流程很长，发布以后再说。\n")  # 发布 and 流程 present, not adjacent
    workspace.write("ko.md", f"# 학교\n\n{KOREAN}\n")
    async with Harness.open(backend_config(workspace, kind, url)) as h:
        await h.sync()
        await ready(h)
        assert sorted(await found(h, "发布 流程")) == ["zh.md", "zh2.md"]
        assert await found(h, '"发布流程"') == ["zh.md"]
        assert await found(h, '"流程发布"') == []
        assert await found(h, '"回归测试" 发布') == ["zh.md"]
        assert await found(h, '"학교에서 한국어"') == ["ko.md"]
        assert await found(h, '"한국어 학교에서"') == []


async def test_a_long_run_of_cjk_is_found_by_any_two_adjacent_characters(workspace: Workspace, kind: str,
                                                                         url: str | None) -> None:
    """No text is dropped: a 10,000-character run without a space is indexed whole (the old analysers
    dropped it as one over-long token), so any two adjacent characters of it find it."""
    fake.register()
    rng = random.Random(48)
    run = "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(10_000))
    workspace.write("run.md", f"# 长文\n\n{run}\n")
    workspace.write("other.md", "# Other\n\nNothing in Han here at all.\n")
    async with Harness.open(backend_config(workspace, kind, url)) as h:
        await h.sync()
        await ready(h)
        for at in [0, 1, 4_999, 9_998, *rng.sample(range(9_999), 12)]:
            assert await found(h, run[at:at + 2]) == ["run.md"], (kind, at)
        assert await found(h, f'"{run[7_000:7_006]}"') == ["run.md"]


async def test_the_same_corpus_ranks_alike_on_every_backend(workspace: Workspace, pg_url: str) -> None:
    """The same documents first, in the same order, for queries in every script (BM25 over the same
    terms; Tantivy rounds field lengths, so the order is compared where scores are clear apart)."""
    fake.register()
    for name, text in CORPUS.items():
        workspace.write(name, text)
    rng = random.Random(7)
    words = ["发布", "测试", "环境", "学校", "검색", "학교", "häuser", "fluss", "release", "tests", "книги",
             "ระบบ", "ข้อมูล", "会議", "engine"]
    for i in range(40):  # documents mixing the words above in different amounts
        picked = rng.choices(words, k=rng.randrange(3, 30))
        workspace.write(f"mix/{i:02}.md", f"# Mix {i}\n\n" + " ".join(picked) + "\n")
    queries = ["发布", "学校 环境", "학교", "häuser fluss", "release tests", "книги", "ระบบ", "会議 engine",
               "发布 学校 검색 release"]
    seen: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for kind in KINDS:
        async with Harness.open(backend_config(workspace, kind, pg_url)) as h:
            await h.sync()
            await ready(h)
            seen[kind] = {}
            for query in queries:
                results = (await h.search(SearchRequest(query=query, mode="keyword", limit=10))).results
                seen[kind][query] = [(r.source_id, r.score) for r in results]
    for query in queries:
        first = seen["embedded"][query]
        assert first, query
        for kind in KINDS[1:]:
            other = seen[kind][query]
            assert len(other) == len(first), (kind, query)
            assert _clear_order(first) == _clear_order(other), (kind, query, first, other)


def _clear_order(ranked: list[tuple[str, float]]) -> list[str]:
    """The ids whose score stands clear (2%) of both neighbours: their order must agree."""
    out = []
    for i, (doc, score) in enumerate(ranked):
        near = [ranked[j][1] for j in (i - 1, i + 1) if 0 <= j < len(ranked)]
        if all(abs(score - s) > 0.02 * max(abs(score), 1e-9) for s in near):
            out.append(doc)
    return out


async def test_a_sources_configured_language_is_followed(workspace: Workspace, kind: str, url: str | None) -> None:
    """``language = "de"`` on a source: its documents are stemmed in German whatever detection says,
    and setting it on a workspace already synced re-analyses that source's documents (PostgreSQL:
    their keyword data recomputed on open; both Tantivy indexes rebuilt)."""
    fake.register()
    workspace.write("haeuser.md", "# Notes\n\nThe Häuser and the gardens of the old town, seen on a walk.\n")
    async with Harness.open(backend_config(workspace, kind, url)) as h:
        await h.sync()
        await ready(h)
        assert await found(h, "Haus") == []  # detected as English: häuser is not stemmed to haus
    async with Harness.open(backend_config(workspace, kind, url, language="de")) as h:
        await ready(h)
        assert await found(h, "Haus") == ["haeuser.md"]
        if kind != "embedded":
            assert h.store is not None
            assert h.store.languages_of(list(h.store.all_ids())) == {next(iter(h.store.all_ids())): "de"}  # type: ignore[attr-defined]
    async with Harness.open(backend_config(workspace, kind, url)) as h:  # back to "auto"
        await ready(h)
        assert await found(h, "Haus") == []


# What schema 7 wrote: PostgreSQL's english lexemes (the statement of that version, shortened).
OLD_POSTINGS = """
WITH v AS (SELECT d.id, to_tsvector('english', coalesce(d.title, '')) AS tt, to_tsvector('english', d.body) AS bt
           FROM documents d),
t AS (SELECT u.lexeme, 't'::"char" AS field, v.id, coalesce(array_length(u.positions, 1), 1) AS tf FROM v, unnest(v.tt) u
      UNION ALL SELECT u.lexeme, 'b'::"char", v.id, coalesce(array_length(u.positions, 1), 1) FROM v, unnest(v.bt) u),
ins AS (INSERT INTO postings(term, field, doc_id, tf, dl)
        SELECT lexeme, field, id, tf, sum(tf) OVER (PARTITION BY id, field) FROM t),
l AS (SELECT id, sum(tf) FILTER (WHERE field = 't') AS tl, sum(tf) FILTER (WHERE field = 'b') AS bl FROM t GROUP BY id)
UPDATE documents d SET title_len = coalesce(l.tl, 0), body_len = coalesce(l.bl, 0), tsv = setweight(v.tt, 'A') || v.bt
FROM v LEFT JOIN l ON l.id = v.id WHERE d.id = v.id
"""


def keyword_data(h: Harness) -> tuple:
    with h.store.db.connection() as conn:  # type: ignore[union-attr]
        return tuple(conn.execute(q).fetchall() for q in (
            "SELECT term, field, doc_id, tf, dl FROM postings ORDER BY 1, 2, 3",
            "SELECT id, language, title_len, body_len, tsv::text FROM documents ORDER BY id",
            "SELECT documents, title_tokens, body_tokens FROM keyword_stats",
            "SELECT language, documents FROM keyword_languages WHERE documents > 0 ORDER BY 1"))


async def test_a_database_of_english_lexemes_is_migrated_to_the_shared_terms(
        workspace: Workspace, pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """A database written before schema 8 holds PostgreSQL's english lexemes (Chinese not found by its
    words, ranking unlike the embedded index's): opening it recomputes every document's keyword data,
    exactly as a fresh write makes it, and says so in the log."""
    import logging

    fake.register()
    for name, text in CORPUS.items():
        workspace.write(name, text)
    config = backend_config(workspace, "postgres-sql", pg_url)
    async with Harness.open(config) as h:
        await h.sync()
        fresh = keyword_data(h)
        with h.store.db.transaction() as conn:  # type: ignore[union-attr]
            conn.execute("ALTER TABLE documents DROP COLUMN language")
            conn.execute("DROP TABLE keyword_languages")
            conn.execute("TRUNCATE postings")
            conn.execute(OLD_POSTINGS)
            conn.execute("UPDATE keyword_stats SET title_tokens = (SELECT sum(title_len) FROM documents), "
                         "body_tokens = (SELECT sum(body_len) FROM documents)")
            conn.execute("UPDATE ctx_meta SET value = '7' WHERE key = 'schema_version'")
    with caplog.at_level(logging.INFO, logger="context_harness.store.postgres.postings"):
        async with Harness.open(config) as h:
            assert h.store is not None and h.store.schema_version == POSTGRES_SCHEMA_VERSION
            assert keyword_data(h) == fresh
            assert await found(h, "发布流程") == ["zh.md"]
            assert await found(h, '"학교에서 한국어"') == ["ko.md"]
    assert any("keyword data of 7 documents recomputed" in r.getMessage() for r in caplog.records)
