"""Settings sections reach rag/ and sync/ config through one conversion, defaults unchanged."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.app import App
from bot.settings import (
    EmbeddingSettings,
    GradingSettings,
    LLMSettings,
    RetrievalSettings,
    SelectionSettings,
    Settings,
    to_config,
)
from rag.config import GradingConfig, ModelConfig, RetrievalConfig, SelectionConfig
from rag.embed import DEFAULT_BACKEND, LocalEmbedder, local_name
from sync.job import JobConfig

PAIRS = [(RetrievalSettings, RetrievalConfig), (GradingSettings, GradingConfig),
         (SelectionSettings, SelectionConfig), (LLMSettings, ModelConfig)]


@pytest.mark.parametrize(("section", "config"), PAIRS)
def test_defaults_agree(section: type[BaseModel], config: type[Any]) -> None:
    """Unset settings give exactly the config's own defaults: no second set of numbers."""
    assert to_config(section(), config) == config()


@pytest.mark.parametrize(("section", "config"), PAIRS)
def test_every_config_field_can_be_set(section: type[BaseModel], config: type[Any]) -> None:
    assert {f.name for f in dataclasses.fields(config)} <= set(section.model_fields)


def test_a_setting_reaches_the_config() -> None:
    made = to_config(RetrievalSettings(limit=7, alpha=0.25), RetrievalConfig)
    assert (made.limit, made.alpha) == (7, 0.25)
    assert to_config(SelectionSettings(), SelectionConfig, max_chunks=3).max_chunks == 3


def test_unset_sync_settings_give_the_jobs_own_limits(tmp_path: Path) -> None:
    """The file-size limit is the documented 50 MB, and the job's default agrees with it."""
    made = App(Settings(data_dir=tmp_path)).sync_config
    assert made.max_file_bytes == JobConfig().max_file_bytes == 50 * 2**20
    assert made.embed_batch == JobConfig().embed_batch


def test_unset_embedding_settings_give_the_embedders_own_default() -> None:
    """A `sift` run and a LocalEmbedder made in code embed into the same vector space."""
    assert EmbeddingSettings().backend == DEFAULT_BACKEND == "openvino-int8"
    assert LocalEmbedder().name == local_name(EmbeddingSettings().backend)
