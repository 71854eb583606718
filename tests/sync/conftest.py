"""Fixtures for sync tests: a deterministic embedder, the in-memory state, a knowledge folder."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.fakes.memory_sync_state import MemorySyncState


class HashEmbedder:
    """Instant, deterministic vectors; counts what it was asked to embed."""

    name, dimension = "test-hash", 16

    def __init__(self) -> None:
        self.calls: list[int] = []

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return [[b / 255 for b in hashlib.sha256(t.encode()).digest()[:16]] for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return (await self.embed_documents([text]))[0]

    @property
    def embedded(self) -> int:
        return sum(self.calls)


def article(title: str, body: str, **meta: object) -> str:
    """A Markdown file with YAML front matter."""
    lines = [f"title: {title}"] + [f"{k}: {v}" for k, v in meta.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n" + body


def paragraph(topic: str, sentences: int = 8) -> str:
    return " ".join(f"Step {i} of the {topic} procedure keeps the service healthy and the "
                    f"team informed about progress." for i in range(sentences))


Writer = Callable[..., Path]


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def memory_state() -> MemorySyncState:
    return MemorySyncState()


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    return root


def write(root: Path, rel: str, content: str | bytes, *, age_s: float = 3600) -> Path:
    """Write a file whose mtime lies `age_s` in the past (before any sync checkpoint)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    return path
