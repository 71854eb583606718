"""`sift serve`'s own defaults: the model on one thread, quick handoffs of the interpreter."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from bot.cli.serve import serving_defaults, serving_process
from bot.settings import EmbeddingSettings, Settings


def test_serve_runs_the_model_on_one_thread_by_default() -> None:
    settings = Settings()
    assert settings.embedding.threads == 0  # other commands: one per core
    served = serving_defaults(settings)
    assert served.embedding.threads == 1
    assert settings.embedding.threads == 0  # the loaded settings are left as they were


def test_workers_from_the_command_line() -> None:
    assert serving_defaults(Settings(), workers=3).workers == 3
    assert serving_defaults(Settings(workers=2)).workers == 2


def test_an_explicit_thread_count_is_kept() -> None:
    settings = Settings(embedding=EmbeddingSettings(threads=2))
    assert serving_defaults(settings).embedding.threads == 2


@pytest.fixture
def switch_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("switch_interval")
def test_serve_hands_the_interpreter_over_within_a_millisecond() -> None:
    sys.setswitchinterval(0.005)  # Python's default
    serving_process()
    assert sys.getswitchinterval() == pytest.approx(0.001)
