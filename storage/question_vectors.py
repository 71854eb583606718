"""Stored embeddings of gap questions (float32 bytes), so the console never embeds on a view."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import select

from storage.db import Database
from storage.models import QuestionVector, table
from storage.upsert import upsert


def stored(db: Database, ids: Sequence[int], model: str) -> dict[int, np.ndarray]:
    """The vectors of these questions made by `model` (others are missing, not stale)."""
    if not ids:
        return {}
    query = select(QuestionVector.interaction_id, QuestionVector.vector).where(
        QuestionVector.interaction_id.in_(list(ids)), QuestionVector.model == model)
    with db.read() as session:
        return {i: np.frombuffer(v, dtype=np.float32) for i, v in session.execute(query)}


def store(db: Database, model: str, vectors: dict[int, Sequence[float]]) -> None:
    rows = [{"interaction_id": i, "model": model,
             "vector": np.asarray(v, dtype=np.float32).tobytes()}
            for i, v in sorted(vectors.items())]
    if not rows:
        return
    with db.write() as session:
        session.execute(upsert(db.dialect, table(QuestionVector), keys=("interaction_id",),
                               replace=("model", "vector")), rows)


def known(db: Database, ids: Sequence[int], model: str) -> set[int]:
    """Which of these questions already have a vector from `model`."""
    if not ids:
        return set()
    query = select(QuestionVector.interaction_id).where(
        QuestionVector.interaction_id.in_(list(ids)), QuestionVector.model == model)
    with db.read() as session:
        return set(session.scalars(query))
