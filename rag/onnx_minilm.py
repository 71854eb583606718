"""MiniLM sentence vectors from an ONNX export with ONNX Runtime and tokenizers alone (no torch)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


class OnnxMiniLM:
    """What sentence-transformers computes for all-MiniLM-L6-v2 (tokenise, encode, mean-pool,
    normalise), without importing torch or transformers: loading those took most of a
    `sift ask`. `export` is the directory sentence-transformers saved the model to."""

    def __init__(self, export: Path, file_name: str, max_seq_length: int) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(export / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_seq_length)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text below
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initialisers are not for users
        self._session = onnxruntime.InferenceSession(
            str(export / file_name), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Unit-length vectors, one row per text, in the order given."""
        # Similar lengths batched together pad less (sentence-transformers does the same).
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        rows: list[np.ndarray] = [np.empty(0)] * len(texts)
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            for i, vector in zip(batch, self._batch([texts[i] for i in batch]), strict=True):
                rows[i] = vector
        return np.stack(rows) if rows else np.empty((0, 0), dtype=np.float32)

    def _batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, :len(encoding.ids)] = encoding.ids
            mask[row, :len(encoding.ids)] = 1
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = self._session.run(None, feed)[0]
        weights = mask[:, :, None].astype(tokens.dtype)
        pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)
