"""Tuning knobs of the pipeline stages, as plain values (bot/app.py fills them from settings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class RetrievalConfig:
    limit: int = 20
    alpha: float = 0.5
    diversity: bool = True
    diversity_balance: float = 0.8
    outage_wait_s: float = 20.0  # how long a search retries an unreachable index
    # A first question is searched and graded as asked while the model understands it (its
    # intent is checked before the answer is written), instead of after: one round trip off
    # the answer's path. A follow-up still waits, its standalone rewrite is what is searched.
    understand_beside: bool = True


@dataclass(frozen=True)
class GradingConfig:
    strategy: Literal["pointwise", "batched"] = "pointwise"
    batch_size: int = 5
    concurrency: int = 20
    call_timeout_s: float = 15.0
    deadline_s: float = 25.0
    early_stop: bool = False
    early_stop_wave: int = 5
    early_stop_enough: int = 6
    early_stop_score: float = 0.8
    # Pointwise grades are streamed and used as soon as their score is read; the reasons
    # follow while the answer is written (one round trip instead of one plus a sentence).
    score_first: bool = True
    # Below 1: once this share of the grades is in, the answer is begun from what they
    # select, and kept if the final selection is the same (rag/early_answer.py). Off by
    # default: on the dev set the last grades changed the selection almost every time
    # (bench/README.md, bench.early_answer_selection), so it cost a call and saved nothing.
    early_answer_share: float = 1.0
    version: str = "g1"


@dataclass(frozen=True)
class SelectionConfig:
    """The selection rules (rag/select.py explains them)."""

    threshold: float = 0.5  # a grade this high makes a question answerable
    max_chunks: int = 10
    per_document: int = 2
    floor: int = 5  # the first N documents in retrieval order are kept ...
    floor_min: float = 0.4  # ... unless graded below this (a verdict of off-topic)
    # ... or, for a heuristic grade, below this share of the best one (rag/select.py: why).
    heuristic_floor_share: float = 0.5
    relative: float = 0.8  # beyond the floor: a grade at least this share of the best
    # Order: 0 is by grade alone (the heuristic grade already holds the retrieval score).
    retrieval_weight: float = 0.0


@dataclass(frozen=True)
class ModelConfig:
    provider: str = "anthropic"  # recorded with each answer's models
    fast_model: str = "claude-haiku-5-5"
    answer_model: str = "claude-sonnet-5-5"
    answer_max_tokens: int = 1200
    # Anthropic caches a prompt prefix only above a minimum length; shorter prefixes would pay
    # the cache-write premium for nothing.
    cache_min_tokens: int = 1024


@dataclass(frozen=True)
class PipelineConfig:
    retrieval: RetrievalConfig = RetrievalConfig()
    grading: GradingConfig = GradingConfig()
    selection: SelectionConfig = SelectionConfig()
    models: ModelConfig = ModelConfig()
    default_mode: Literal["accurate", "fast"] = "accurate"
    fast_share: float = 0.0  # A/B: share of questions routed through fast mode
