"""Document embedding straight through ONNX Runtime: batches by token count, one model run per core.

fastembed pads every batch to its longest text and runs one session with all cores as intra-op
threads. On 2 cores that spends about half the CPU on padding and thread hand-offs. Here:

- texts are tokenised without padding, sorted by token count, and cut into runs of at most
  ``token_budget`` padded tokens and ``max_texts`` texts, so short chunks ride with short ones;
- each worker thread owns a single-threaded session (sequential execution, no spin-waiting; up to
  ``MAX_WORKERS`` workers, more threads go to each session) and takes the next run, so the cores
  work on different runs instead of splitting one small matrix product;
- the vectors are mean-pooled over the attention mask, normalised and put back in input order.

Measured on 200 SciFact chunks (~190 tokens) on 2 shared cores, CPU-ms per chunk: fastembed 95;
int8 copy 42 one text per run, 49 in runs of 2,048 tokens; the model itself 62 one per run, 71 in
runs of 2,048 tokens. On short texts (~30 tokens) runs pay: int8 6.4 in runs of 512 tokens vs 8.4
one per run; the model itself 10.2 vs 12.6.

The int8 copy quantises activations with one scale per run (ONNX Runtime's dynamic quantisation):
a text's vector would depend on the texts it runs with (cosine down to ~0.96 against the text run
alone). So it runs one text per run (``max_texts=1``), and a text always gets the same vector.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: Padded tokens per model run (see the measurements above).
TOKEN_BUDGET = 512
#: At most this many worker sessions (each holds its own copy of the model, ~50 MB for the int8
#: copy); with more threads than that, each session gets several intra-op threads.
MAX_WORKERS = 4


def length_batches(lengths: Sequence[int], max_texts: int, token_budget: int = TOKEN_BUDGET) -> list[list[int]]:
    """Positions of ``lengths`` grouped into runs: sorted by length, each run at most ``max_texts``
    long and, padded to its longest member, at most ``token_budget`` tokens (a single text longer
    than the budget runs alone)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    runs: list[list[int]] = []
    current: list[int] = []
    for position in order:
        if current and (len(current) >= max_texts or (len(current) + 1) * lengths[position] > token_budget):
            runs.append(current)
            current = []
        current.append(position)
    if current:
        runs.append(current)
    return runs


class DocumentRunner:
    """Embeds documents with a mean-pooled, normalised BERT-style ONNX model (the bundled MiniLM).

    ``tokenizer`` is a ``tokenizers.Tokenizer`` with the model's truncation; its padding is ignored
    (a copy without padding is kept). Thread-safe: concurrent calls share the worker sessions."""

    def __init__(self, model_path: Path, tokenizer: Any, *, dims: int, threads: int, max_texts: int,
                 token_budget: int = TOKEN_BUDGET) -> None:
        from tokenizers import Tokenizer

        self.model_path = model_path
        self.max_texts = max(1, max_texts)
        self.token_budget = max(1, token_budget)
        self.tokenizer = Tokenizer.from_str(tokenizer.to_str())
        self.tokenizer.no_padding()
        # Start the tokenizers' process-wide thread pool from this (normal-priority) thread: started on a
        # background embedding's lowered thread, its threads would keep that nice value for good.
        self.tokenizer.encode_batch(["", ""])
        workers = max(1, min(threads, MAX_WORKERS))
        self.sessions = [_session(model_path, max(1, threads // workers)) for _ in range(workers)]
        self.dims = dims
        self._inputs = {node.name for node in self.sessions[0].get_inputs()}
        self._free = list(self.sessions)
        self._free_lock = threading.Condition()

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors for ``texts``, shape ``(len(texts), dims)``, in input order."""
        encodings = self.tokenizer.encode_batch(texts)
        ids = [encoding.ids for encoding in encodings]
        runs = length_batches([len(row) for row in ids], self.max_texts, self.token_budget)
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        pending = iter(reversed(runs))  # longest first: the cores finish a call together
        lock = threading.Lock()
        errors: list[BaseException] = []

        def work() -> None:
            session = self._take()
            try:
                while not errors:
                    with lock:
                        run = next(pending, None)
                    if run is None:
                        return
                    out[run] = self._run(session, [ids[i] for i in run])
            except BaseException as exc:  # re-raised in the caller's thread
                errors.append(exc)
            finally:
                self._give(session)

        helpers = [threading.Thread(target=work, name="ctx-embed", daemon=True)
                   for _ in range(min(len(self.sessions), len(runs)) - 1)]
        for helper in helpers:
            helper.start()
        work()
        for helper in helpers:
            helper.join()
        if errors:
            raise errors[0]
        return out

    def _take(self) -> Any:
        with self._free_lock:
            while not self._free:
                self._free_lock.wait()
            return self._free.pop()

    def _give(self, session: Any) -> None:
        with self._free_lock:
            self._free.append(session)
            self._free_lock.notify()

    def _run(self, session: Any, rows: list[list[int]]) -> np.ndarray:
        width = max(len(row) for row in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, row in enumerate(rows):
            ids[r, :len(row)] = row
            mask[r, :len(row)] = 1
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = session.run(None, feed)[0]  # (rows, width, dims)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)


def _session(model_path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
