"""The optional reranker stage (``[retrieval] rerank``): reorders a search's top results.

- ``"off"`` (default): nothing happens.
- ``"http"``: POST ``{model, query, documents, top_n}`` to ``rerank_url`` (the ``/rerank`` shape of
  vLLM, llama.cpp's server, TEI, Jina and Cohere); the answer is ``{"results": [{index,
  relevance_score}]}`` or TEI's bare ``[{index, score}]``. ``rerank_api_key`` goes as a Bearer token.
- ``"local:<model>"``: a fastembed cross-encoder (``TextCrossEncoder``), loaded only from the cache:
  nothing downloads at run time. Absent, the engine refuses to start with the command that fetches it.

Every mode is reranked when it is on. The top ``rerank_top_n`` results are reordered by the
reranker's score (text: title, heading and snippet), the rest keep their place after them. A call that
fails, outlasts ``rerank_budget_ms`` (connecting included: the HTTP call's socket is shut down at the
deadline) or answers anything but one finite score per document leaves the fused order and says so
in the response's notice.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from context_harness.common import jsonlimits
from context_harness.common.deadline import Deadline
from context_harness.config import Config, RetrievalConfig
from context_harness.errors import NotConfigured
from context_harness.models import SearchExplain, SearchResponse, SearchResult

log = logging.getLogger(__name__)

Scorer = Callable[[str, Sequence[str], float], list[float]]  # (query, texts, seconds) -> one score per text

MAX_ANSWER_BYTES = 8 << 20  # a longer answer is refused, not cut to JSON that fails to parse

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
        """The endpoint's scores, within ``seconds`` in all (connecting, sending, reading): at the
        deadline the socket is shut down, so a server that stalls or drips its answer costs no more
        time, and no thread or socket stays behind."""
        import http.client  # here, not at the top: a search without an HTTP reranker never needs it

        body = json.dumps({"model": self.model, "query": query, "documents": list(texts),
                           "top_n": len(texts)}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        parts = urllib.parse.urlsplit(self.url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        with Deadline(seconds) as deadline:
            connection = kind(parts.netloc, timeout=deadline.connect_timeout(seconds))
            answer = None
            try:
                connection.connect()
                deadline.watch(connection.sock)
                connection.request("POST", urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, "")),
                                   body=body, headers=headers)
                answer = connection.getresponse()
                if answer.status >= 300:
                    raise RerankFailed(f"the reranker answered HTTP {answer.status}")
                raw = answer.read(MAX_ANSWER_BYTES + 1)
                if len(raw) > MAX_ANSWER_BYTES:
                    raise RerankFailed(f"the reranker's answer is over {MAX_ANSWER_BYTES >> 20} MB")
                payload = jsonlimits.loads(raw)  # an answer nested 1,000 deep is a ValueError, not a RecursionError
            except (OSError, ValueError, http.client.HTTPException) as exc:
                if deadline.expired:
                    raise RerankFailed(f"no answer within rerank_budget_ms ({seconds * 1000:.0f} ms)") from None
                raise RerankFailed(f"the reranker could not be reached or answered no JSON ({type(exc).__name__})") \
                    from None
            finally:
                if answer is not None:
                    answer.close()
                connection.close()
        return parse_scores(payload, len(texts))


def parse_scores(payload: Any, count: int) -> list[float]:
    """One score per document from ``{"results": [{index, relevance_score}]}`` or ``[{index, score}]``;
    a document the answer leaves out scores below every scored one. ``RerankFailed`` for an answer
    that is not exactly that: an index that is not an integer (``true`` is not 1), out of range or
    given twice, a score that is not a finite number (a string, NaN, infinity), a missing field."""
    items = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise RerankFailed("the reranker's answer has no results list")
    if len(items) > count:
        raise RerankFailed(f"the reranker's answer has {len(items)} results for {count} documents")
    scores = [float("-inf")] * count
    given: set[int] = set()
    for item in items:
        fields: dict[str, Any] = item if isinstance(item, dict) else {}
        index = fields.get("index")
        score = fields.get("relevance_score", fields.get("score"))
        if isinstance(index, bool) or not isinstance(index, int):  # JSON's true is an int to Python
            raise RerankFailed("the reranker's answer has a result without an integer index")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise RerankFailed(f"the reranker's answer gives document {index} no finite numeric score")
        if not 0 <= index < count:
            raise RerankFailed(f"the reranker's answer names document {index} of {count}")
        if index in given:
            raise RerankFailed(f"the reranker's answer scores document {index} twice")
        given.add(index)
        scores[index] = float(score)
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
    texts = [passage(r) for r in head]
    try:
        if isinstance(scorer, HttpReranker):  # keeps its own deadline, in this thread
            scores = scorer(query, texts, budget)
        else:
            scores = _within(budget, lambda: scorer(query, texts, budget))
        if len(scores) != len(head) or any(math.isnan(score) or score == math.inf for score in scores):
            raise RerankFailed("the reranker gave no finite score for each result")
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
    """``call()``'s answer (a local model's), or ``RerankFailed`` when it takes longer than ``seconds``
    (a model cannot be interrupted: it then runs on, unwatched, in its daemon thread, until it ends)."""
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
