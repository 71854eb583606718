"""Builds pipelines from parts for rag tests (bot/app.py does the same from settings)."""

from __future__ import annotations

from typing import Any

from rag.config import GradingConfig, ModelConfig, PipelineConfig, RetrievalConfig
from rag.generate import ExtractiveGenerator, LLMGenerator
from rag.grade import Grader, LLMGrader
from rag.grade_cache import CachedGrader
from rag.heuristic import HeuristicGrader
from rag.language import CorpusLanguage
from rag.llm import AnthropicLLM
from rag.messages import LLM_DOWN_NOTE
from rag.output_policy import OutputPolicy
from rag.pipeline import Pipeline, Stages
from rag.ports import GradeCache, InteractionRecorder, SyncProgress
from rag.prior import DocumentPriors
from rag.retrieve import Retriever
from rag.types import Chunk
from rag.understand import Understander

# Clients made here are closed when the fake Anthropic fixture stops (tests/fakes/fixtures.py).
OPEN_LLMS: list[AnthropicLLM] = []


def make_llm(base_url: str, *, max_retries: int = 2, timeout_s: float = 10.0) -> AnthropicLLM:
    llm = AnthropicLLM(api_key="sk-test-key", base_url=base_url, max_retries=max_retries,
                       timeout_s=timeout_s)
    OPEN_LLMS.append(llm)
    return llm


def make_pipeline(index: Any, embedder: Any, llm: AnthropicLLM | None = None, *,
                  grading: GradingConfig | None = None, cache: GradeCache | None = None,
                  recorder: InteractionRecorder | None = None,
                  config: PipelineConfig | None = None,
                  policy: OutputPolicy | None = None,
                  priors: DocumentPriors | None = None,
                  syncs: SyncProgress | None = None,
                  extractive: ExtractiveGenerator | None = None,
                  corpus: CorpusLanguage | None = None) -> Pipeline:
    config = config or PipelineConfig(retrieval=RetrievalConfig(diversity=False),
                                      grading=grading or GradingConfig())
    models = config.models or ModelConfig()
    accurate: Grader | None = None
    if llm is not None:
        accurate = LLMGrader(llm, models.fast_model, config.grading)
        if cache is not None:
            accurate = CachedGrader(accurate, cache, f"{config.grading.version}:test")
    stages = Stages(
        understander=Understander(llm, models.fast_model),
        retriever=Retriever(index, embedder, config.retrieval),
        fast_grader=HeuristicGrader(),
        accurate_grader=accurate,
        generator=LLMGenerator(llm, models.answer_model, models.answer_max_tokens)
        if llm else None,
        extractive=extractive or ExtractiveGenerator(),
        fallback_extractive=ExtractiveGenerator(note=LLM_DOWN_NOTE),
        priors=priors,
        syncs=syncs,
        corpus=corpus,
    )
    return Pipeline(stages, config, recorder, policy)


def chunk(doc_id: str, title: str, text: str, *, section: str = "", index: int = 0,
          access: tuple[str, ...] = ("public",), doc_type: str = "how-to") -> Chunk:
    return Chunk(chunk_id=f"kb:{doc_id}:{index}", doc_id=doc_id, source="kb", title=title,
                 text=text, section=section, chunk_index=index, content_hash=f"h-{doc_id}",
                 url=f"https://wiki.example/{doc_id}", access=access, doc_type=doc_type)


class CountingIndex:
    """Any index, counting the searches made through it; the phrases it was searched with."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.searches: list[str] = []

    async def search(self, query: str, *args: Any, **kwargs: Any) -> Any:
        self.searches.append(query)
        return await self.inner.search(query, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
