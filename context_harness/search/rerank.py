"""The optional reranker stage (``[retrieval] rerank``): reorders a search's top results.

- ``"off"`` (default): nothing happens.
- ``"http"``: POST ``{model, query, documents, top_n}`` to ``rerank_url`` (the ``/rerank`` shape of
  vLLM, llama.cpp's server, TEI, Jina and Cohere); the answer is ``{"results": [{index,
  relevance_score}]}`` or TEI's bare ``[{index, score}]``. ``rerank_api_key`` goes as a Bearer token.
- ``"local:<model>"``: a fastembed cross-encoder (``TextCrossEncoder``), loaded only from the cache:
  nothing downloads at run time. Absent, the engine refuses to start with the command that fetches it.

Every mode is reranked when it is on. The top ``rerank_top_n`` results are reordered by the
reranker's score (text: title, heading and snippet), the rest keep their place after them. A call that
fails or outlasts ``rerank_budget_ms`` leaves the fused order and says so in the response's notice.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from context_harness.config import Config, RetrievalConfig
from context_harness.errors import NotConfigured
from context_harness.models import SearchExplain, SearchResponse, SearchResult

log = logging.getLogger(__name__)

Scorer = Callable[[str, Sequence[str], float], list[float]]  # (query, texts, seconds) -> one score per text

FETCH_HINT = ("where a network exists, fetch it once with: python -c \"from fastembed import TextCrossEncoder; "
              "TextCrossEncoder('{model}', cache_dir='{cache}')\" (the model cache), then copy that "
              "folder here if this machine is offline")


class RerankFailed(Exception):
    """The reranker gave no usable scores; the message is safe to show (no secret, no body)."""


def make_reranker(config: Config) -> Scorer | None:
    """The scorer ``[retrieval] rerank`` asks for; None when off. Raises ``NotConfigured`` at start
    when a local model is not in the cache, or ``http`` has no ``rerank_url``."""
    retrieval = config.retrieval
    if retrieval.rerank == "off":
        return None
    if retrieval.rerank == "http":
        if not retrieval.rerank_url:
            raise NotConfigured('[retrieval] rerank = "http" needs rerank_url (e.g. "http://127.0.0.1:8080/rerank")')
        return HttpReranker(retrieval)
    return _local_scorer(retrieval.rerank.removeprefix("local:"))


class HttpReranker:
    """An OpenAI/Cohere-style ``/rerank`` endpoint, called with the standard library."""

    def __init__(self, retrieval: RetrievalConfig) -> None:
        self.url = retrieval.rerank_url or ""
        self.model = retrieval.rerank_model
        self.api_key = retrieval.rerank_api_key

    def __call__(self, query: str, texts: Sequence[str], seconds: float) -> list[float]:
        body = json.dumps({"model": self.model, "query": query, "documents": list(texts),
                           "top_n": len(texts)}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        parts = urllib.parse.urlsplit(self.url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(parts.netloc, timeout=max(seconds, 0.001))
        answer = None
        try:
            connection.request("POST", urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, "")),
                               body=body, headers=headers)
            answer = connection.getresponse()
            if answer.status >= 300:
                raise RerankFailed(f"the reranker answered HTTP {answer.status}")
            payload = json.loads(answer.read(8 << 20))
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise RerankFailed(f"the reranker could not be reached or answered no JSON ({type(exc).__name__})") \
                from None
        finally:
            if answer is not None:
                answer.close()
            connection.close()
        return parse_scores(payload, len(texts))


def parse_scores(payload: Any, count: int) -> list[float]:
    """One score per document from ``{"results": [{index, relevance_score}]}`` or ``[{index, score}]``;
    a document the answer leaves out scores below every scored one."""
    items = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise RerankFailed("the reranker's answer has no results list")
    scores = [float("-inf")] * count
    for item in items:
        try:
            index = int(item["index"])
            score = float(item["relevance_score"] if "relevance_score" in item else item["score"])
        except (KeyError, TypeError, ValueError):
            raise RerankFailed("the reranker's answer has a result without index and score") from None
        if not 0 <= index < count:
            raise RerankFailed(f"the reranker's answer names document {index} of {count}")
        scores[index] = score
    return scores


def _local_scorer(model: str) -> Scorer:
    """A fastembed cross-encoder from the cache only (``HF_HUB_OFFLINE`` while it loads)."""
    from context_harness.embedding import bundled
    from context_harness.embedding.local import _fastembed_muted, _hub_offline

    folder = bundled.models_dir() / "fastembed"  # where the local embedder keeps its downloads
    try:
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        with _hub_offline(True), _fastembed_muted():
            encoder = TextCrossEncoder(model_name=model, cache_dir=str(folder), local_files_only=True)
    except Exception as exc:
        log.debug("loading reranker %s failed", model, exc_info=True)
        raise NotConfigured(f'[retrieval] rerank = "local:{model}": the model is not in the cache ({folder.name} '
                            f"under the model cache) and nothing downloads at run time; "
                            + FETCH_HINT.format(model=model, cache=folder)) from exc

    def score(query: str, texts: Sequence[str], seconds: float) -> list[float]:
        return [float(s) for s in encoder.rerank(query, list(texts))]
    return score


def rerank(scorer: Scorer, query: str, response: SearchResponse, retrieval: RetrievalConfig,
           explain: bool) -> None:
    """Reorder ``response.results``' top ``rerank_top_n`` by the scorer, within the budget; on a
    failure or a timeout keep the order and set the notice."""
    head = response.results[:retrieval.rerank_top_n]
    if len(head) < 2:
        return
    budget = retrieval.rerank_budget_ms / 1000
    try:
        scores = _within(budget, lambda: scorer(query, [passage(r) for r in head], budget))
    except RerankFailed as exc:
        log.warning("rerank skipped: %s", exc)
        _notice(response, f"rerank skipped ({exc}): results are in fused order")
        return
    order = sorted(range(len(head)), key=lambda i: -scores[i])  # stable: ties keep the fused order
    for i, result in enumerate(head):
        if explain:
            result.explain = result.explain or SearchExplain()
            result.explain.rerank_score = scores[i] if scores[i] != float("-inf") else None
    response.results[:len(head)] = [head[i] for i in order]


def passage(result: SearchResult) -> str:
    """What the reranker reads of a result: its title, heading path and snippet."""
    return "\n".join(part for part in (result.title, result.heading, result.snippet) if part)


def _within(seconds: float, call: Callable[[], list[float]]) -> list[float]:
    """``call()``'s answer, or ``RerankFailed`` when it takes longer than ``seconds`` (it then runs on,
    unwatched, in its daemon thread)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["scores"] = call()
        except RerankFailed as exc:
            box["error"] = exc
        except Exception as exc:  # a local model's failure: the search still answers
            log.debug("reranker failed", exc_info=True)
            box["error"] = RerankFailed(f"the reranker failed ({type(exc).__name__})")
    started = time.monotonic()
    worker = threading.Thread(target=run, name="ctx-rerank", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise RerankFailed(f"no answer within rerank_budget_ms ({seconds * 1000:.0f} ms)")
    if "error" in box:
        raise box["error"]
    log.debug("reranked in %.1f ms", (time.monotonic() - started) * 1000)
    return box["scores"]


def _notice(response: SearchResponse, text: str) -> None:
    response.notice = f"{response.notice}; {text}" if response.notice else text
