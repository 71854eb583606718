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
    version: str = "g1"


@dataclass(frozen=True)
class SelectionConfig:
    threshold: float = 0.5
    max_chunks: int = 12
    per_document: int = 5


@dataclass(frozen=True)
class ModelConfig:
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
