"""One evaluation: index the corpus (or use the synced sources), ask, judge, summarise."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from evaluation.dataset import EvalSet
from evaluation.feedback_sim import VOTERS, Replays, SimOptions, SimQuestion, replay
from evaluation.indexing import EvalIndex, IndexInfo, collection_name, fingerprint
from evaluation.judge import Judge
from evaluation.languages import LanguageRow, asked_in, by_language
from evaluation.runner import MODES, Plan, QueryResult, Runner
from evaluation.summary import Results, summarise
from rag.config import PipelineConfig
from rag.heuristic import heuristic_scores
from rag.index import WeaviateIndex
from rag.pipeline import Pipeline
from rag.ports import LLM, Embedder
from rag.prior import PriorConfig
from rag.retrieve import Retriever
from rag.types import Candidate, Grade, GradeSource
from rag.understand import Understander
from sync.job import JobConfig
from sync.report import NoProgress, Progress

log = logging.getLogger(__name__)

NO_LLM_NOTE = ("Answer metrics (faithfulness, accuracy, refusal rate) were skipped: no LLM is "
               "configured (set ANTHROPIC_API_KEY). The graded mode used the heuristic grader.")


@dataclass(frozen=True)
class Harness:
    """What an evaluation is given, built by the composition root (bot/app.py): the parts it
    runs, never the whole App or Settings."""

    index: Callable[[str], WeaviateIndex]  # "": the configured collection, else the one named
    pipeline: Callable[[WeaviateIndex], Pipeline]  # the graded pipeline over an index
    embedder: Embedder
    job: JobConfig  # the corpus is chunked exactly as `sift sync` would
    config: PipelineConfig
    prior: PriorConfig
    llm: LLM | None  # None: fast mode, the heuristic grader and no judge
    folder: Path  # where each dataset's reports and index markers go
    embedding_backend: str
    judge_timeout_s: float
    relevant_threshold: float  # SIFT_STORAGE__RELEVANT_THRESHOLD, for the feedback replay


@dataclass(frozen=True)
class Options:
    ks: tuple[int, ...] = (5, 10, 20)
    modes: tuple[str, ...] = MODES
    limit: int | None = None  # the first N questions only
    concurrency: int = 1
    rebuild: bool = False
    judge_model: str = ""  # default: the configured answer model
    simulate_feedback: int = 0  # rounds of simulated votes (0: no simulation)
    feedback_noise: float = 0.1
    feedback_seeds: int = 5  # replays per kind of voter, each with its own random draw
    # --languages: the questions in other languages, by language, then question id
    languages: dict[str, dict[str, str]] | None = None


@dataclass(frozen=True)
class RunSettings:
    """The settings the figures depend on, printed with them."""

    alpha: float
    depth: int  # candidates per question in bm25 / vector / hybrid
    pipeline_limit: int  # candidates the graded mode retrieves and grades
    diversity: bool
    diversity_balance: float
    grader: str  # "llm (<model>)" or "heuristic"
    understand: str
    answer_model: str
    threshold: float
    max_chunks: int
    per_document: int
    embedder: str
    embedding_backend: str
    ks: tuple[int, ...]


@dataclass(frozen=True)
class Report:
    dataset: str
    path: str
    queries: int
    index: IndexInfo
    settings: RunSettings
    results: Results
    note: str = ""  # why the answer metrics are missing, when they are
    feedback: tuple[Replays, ...] = ()  # --simulate-feedback: per kind of voter, per seed
    feedback_seconds: float = 0.0  # time the feedback replays took
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    seconds: float = 0.0
    languages: tuple[LanguageRow, ...] = ()  # --languages: retrieval per language


def _settings(harness: Harness, options: Options, depth: int) -> RunSettings:
    config, llm = harness.config, harness.llm
    models = config.models
    return RunSettings(
        alpha=config.retrieval.alpha, depth=depth, pipeline_limit=config.retrieval.limit,
        diversity=config.retrieval.diversity,
        diversity_balance=config.retrieval.diversity_balance,
        grader=f"llm ({models.fast_model})" if llm else "heuristic",
        understand=f"llm ({models.fast_model})" if llm else "none (question as asked)",
        answer_model=models.answer_model if llm else "extractive (no LLM)",
        threshold=config.selection.threshold, max_chunks=config.selection.max_chunks,
        per_document=config.selection.per_document, embedder=harness.embedder.name,
        embedding_backend=harness.embedding_backend, ks=options.ks)


def eval_dir(harness: Harness, dataset: EvalSet) -> Path:
    return harness.folder / dataset.name


async def _index(harness: Harness, dataset: EvalSet, options: Options,
                 progress: Progress) -> tuple[WeaviateIndex, IndexInfo]:
    """The dataset's own collection, or the configured one for a question-only set."""
    embedder, job = harness.embedder, harness.job
    if dataset.corpus is None:
        started = time.perf_counter()
        index = harness.index("")
        await index.connect()
        count = await index.count()
        return index, IndexInfo(index.config.collection, True,
                                round(time.perf_counter() - started, 2), 0, count,
                                embedder=embedder.name)
    digest = fingerprint(dataset.corpus, job.chunking, embedder.name, embedder.dimension)
    index = harness.index(collection_name(dataset.name, digest))
    marker = eval_dir(harness, dataset) / f"index-{digest[:10]}.json"
    builder = EvalIndex(index, embedder, f"eval-{dataset.name}", job, marker)
    info = await builder.prepare(dataset.corpus, progress, options.rebuild)
    if not info.reused:
        await _drop_superseded(harness, marker)
    return index, info


async def _drop_superseded(harness: Harness, current: Path) -> None:
    """Drop the collections of earlier builds of this dataset: each edit would leave one."""
    for marker in current.parent.glob("index-*.json"):
        if marker == current:
            continue
        try:
            collection = json.loads(marker.read_text(encoding="utf-8"))["collection"]
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("unreadable eval index marker %s: left alone", marker)
            continue
        old = harness.index(collection)
        try:
            await old.connect(ensure=False)
            if await old.collection_exists():
                await old.drop()
            log.info("dropped %s, superseded by a new build", collection)
            marker.unlink()
        finally:
            await old.close()


async def evaluate(harness: Harness, dataset: EvalSet, options: Options,
                   indexing: Progress | None = None,
                   on_question: Callable[[QueryResult], None] | None = None) -> Report:
    """Index (or reuse), ask every question in every mode, judge answers, summarise."""
    started = time.perf_counter()
    dataset = dataset.limited(options.limit)
    index, info = await _index(harness, dataset, options, indexing or NoProgress())
    try:
        config = harness.config
        depth = max(config.retrieval.limit, *options.ks)
        retriever = Retriever(index, harness.embedder, replace(config.retrieval, limit=depth))
        llm = harness.llm
        judge_model = options.judge_model or config.models.answer_model
        judge = Judge(llm, judge_model, harness.judge_timeout_s) if llm else None
        plan = Plan(options.modes, config.retrieval.alpha, depth, options.concurrency,
                    accurate=llm is not None, documents=max(options.ks))
        runner = Runner(plan, retriever, harness.pipeline(index), judge)
        await harness.embedder.embed_query("warm-up")  # the model load must not count as latency
        results = await runner.run(dataset.queries, on_question)
        languages = await _languages(harness, dataset, options, plan, retriever, index)
    finally:
        await index.close()
    summary = summarise(results, options.modes, options.ks, judge_model if judge else "")
    note = "" if llm is not None or "graded" not in options.modes else NO_LLM_NOTE
    replayed = time.perf_counter()
    feedback = _simulations(harness, results, options)
    return Report(dataset.name, str(dataset.path), len(dataset.queries), info,
                  _settings(harness, options, depth), summary, note, feedback,
                  round(time.perf_counter() - replayed, 2) if feedback else 0.0,
                  seconds=round(time.perf_counter() - started, 2), languages=languages)


async def _languages(harness: Harness, dataset: EvalSet, options: Options, plan: Plan,
                     retriever: Retriever, index: WeaviateIndex) -> tuple[LanguageRow, ...]:
    """The questions in other languages, searched as asked and with the model's phrases."""
    if not options.languages:
        return ()
    llm = harness.llm
    understander = Understander(llm, harness.config.models.fast_model) if llm else None
    return await by_language(asked_in(options.languages, dataset.queries), plan, retriever,
                             understander, index, options.ks)


def _simulations(harness: Harness, results: list[QueryResult],
                 options: Options) -> tuple[Replays, ...]:
    """The feedback replay over the graded mode's candidates, per kind of voter and seed."""
    if not options.simulate_feedback:
        return ()
    questions = [SimQuestion(r.query.relevant, r.answer.candidates, r.query.text)
                 for r in results if r.answer is not None and r.query.relevant]
    selection, threshold = harness.config.selection, harness.relevant_threshold
    regrade = None if harness.llm is not None else heuristic_grade
    return tuple(replay(questions, SimOptions(options.simulate_feedback, options.feedback_noise,
                                              voters, relevant_threshold=threshold),
                        options.feedback_seeds, selection, harness.prior, regrade)
                 for voters in VOTERS)


def heuristic_grade(question: str, candidates: Sequence[Candidate]) -> list[Grade]:
    return [Grade(score, reason, GradeSource.HEURISTIC)
            for score, reason in heuristic_scores(question, candidates)]
