"""`sift serve`'s own defaults: the embedding model on one thread unless the setting says more."""

from __future__ import annotations

from bot.cli.serve import serving_defaults
from bot.settings import EmbeddingSettings, Settings


def test_serve_runs_the_model_on_one_thread_by_default() -> None:
    settings = Settings()
    assert settings.embedding.threads == 0  # other commands: one per core
    serving_defaults(settings)
    assert settings.embedding.threads == 1


def test_an_explicit_thread_count_is_kept() -> None:
    settings = Settings(embedding=EmbeddingSettings(threads=2))
    serving_defaults(settings)
    assert settings.embedding.threads == 2
