"""The question pipeline: understand -> retrieve -> grade -> select -> generate -> record."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from rag import messages
from rag.circuit import CircuitBreaker
from rag.config import PipelineConfig
from rag.early_answer import EarlyAnswer
from rag.errors import LLMError, SiftError
from rag.generate import Draft, ExtractiveGenerator, suggestions
from rag.grade import Grader, GradingResult, Scoreboard
from rag.i18n import current, tr
from rag.language import CorpusLanguage, detect, differs, display_name
from rag.logcontext import bind_correlation_id, new_correlation_id, reset_correlation_id
from rag.lookup import DocumentStore, Lookup
from rag.output_policy import OutputPolicy
from rag.patience import NO_RETRY, Retrying
from rag.ports import InteractionRecorder, ReviewDates, SyncProgress, TextSink
from rag.prior import DocumentPriors, adjusted, hidden_documents
from rag.retrieve import Retriever
from rag.select import select, selected_in_order
from rag.spans import stage_span
from rag.types import (
    Answer,
    AnswerStatus,
    Candidate,
    Grade,
    GradeSource,
    Intent,
    Mode,
    Question,
    QuestionImage,
    SearchFilters,
    Turn,
    Understanding,
    Usage,
)
from rag.understand import Understander, passthrough, rule_based

log = logging.getLogger(__name__)
NOT_GRADED_YET = Grade(0.0, "not graded yet", GradeSource.LLM)  # for the early selection only
CLAUDE = frozenset({"anthropic", "bedrock", "vertex"})  # the providers whose models read images


class Generator(Protocol):
    async def generate(self, question: str, selected: Sequence[Candidate],
                       history: Sequence[Turn] = (), preview: TextSink | None = None,
                       images: tuple[QuestionImage, ...] = (), *,
                       language: str = "") -> Draft: ...


@dataclass
class _Run:
    """Per-question bookkeeping: stage timings, token usage and model ids."""

    started: float
    timings: dict[str, float]
    usage: dict[str, Usage]
    models: dict[str, str]

    def lap(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.timings[stage] = round((now - since) * 1000, 2)
        stage_span(stage, since, now)
        return now


@dataclass
class _Beside:
    """The model's understanding of a first question, running beside its search: the answer
    waits for its intent (read as soon as the reply begins with it), not for the rest."""

    task: asyncio.Task[tuple[Understanding, Usage]]
    intent: asyncio.Future[Intent]

    def __post_init__(self) -> None:
        self.task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[tuple[Understanding, Usage]]) -> None:
        if self.intent.done():
            return
        if task.cancelled():
            self.intent.cancel()
        elif (failure := task.exception()) is not None:
            self.intent.set_exception(failure)
        else:
            self.intent.set_result(task.result()[0].intent)

    async def understood(self) -> Understanding:
        return (await self.task)[0]

    async def settled(self) -> None:
        """Its call finished, so that its tokens are counted with the answer."""
        await asyncio.wait((self.task,))

    def cancel(self) -> None:
        self.task.cancel()  # a no-op once done


@dataclass(frozen=True)
class Stages:
    understander: Understander
    retriever: Retriever
    fast_grader: Grader
    accurate_grader: Grader | None  # None: no LLM configured
    generator: Generator | None  # None: no LLM configured
    extractive: ExtractiveGenerator
    fallback_extractive: ExtractiveGenerator  # when the answer model fails mid-question
    circuit: CircuitBreaker | None = None  # open: the LLM is skipped (rag/circuit.py)
    # when the answer repeated the prompts (rag/output_policy.py)
    withheld_extractive: ExtractiveGenerator = field(
        default_factory=lambda: ExtractiveGenerator(note=messages.WITHHELD_NOTE))
    priors: DocumentPriors | None = None  # admin overrides and the learned document prior
    syncs: SyncProgress | None = None  # to tell "not read yet" from "not in the knowledge base"
    reviews: ReviewDates | None = None  # a cited document past its review date is said so
    documents: DocumentStore | None = None  # whole documents, for tools (rag/lookup.py)
    corpus: CorpusLanguage | None = None  # the documents' language, for cross-language search


class Pipeline:
    def __init__(self, stages: Stages, config: PipelineConfig,
                 recorder: InteractionRecorder | None = None,
                 policy: OutputPolicy | None = None, recording: Retrying = NO_RETRY) -> None:
        self._s = stages
        self._config = config
        self._recorder = recorder
        self._recording = recording  # how recording waits out a database away for a moment
        # Every surface receives the pipeline's text, so the policy is applied here, once.
        self._policy = policy or OutputPolicy()

    @property
    def lookup(self) -> Lookup:
        """Search and whole documents for tools, with this pipeline's retrieval, prior and
        output policy: one way to a document."""
        return Lookup(self._s.retriever, self._s.documents, self._s.priors, self._policy)

    def reads_images(self) -> bool:
        """Claude (on any provider) writes the answers and may be called now: an image goes
        to it; otherwise its text is read before the question is asked."""
        return self._s.generator is not None and self._config.models.provider in CLAUDE and \
            (self._s.circuit is None or self._s.circuit.allows_calls())

    def resolve_mode(self, question: Question) -> Mode:
        return self._route(question)[0]

    def _route(self, question: Question) -> tuple[Mode, str]:
        """The mode, and the A/B arm when the split chose it: only those questions compare
        the arms fairly (an explicitly chosen mode is not an arm)."""
        if self._s.accurate_grader is None:
            return Mode.FAST, ""
        if question.mode is not None:
            return question.mode, ""
        if not self._config.fast_share:
            return Mode(self._config.default_mode), ""
        fast = random.random() < self._config.fast_share
        mode = Mode.FAST if fast else Mode(self._config.default_mode)
        return mode, mode.value

    async def answer(self, question: Question, preview: TextSink | None = None) -> Answer:
        """Answer one question; failures become an `error` answer, never an exception.

        `preview` receives the generated answer's text so far while it is written, citations
        already numbered as in the final answer. It is a preview: the returned Answer is what
        to show in the end (it may differ, e.g. excerpts when the model failed half-way).
        """
        question = replace(question, correlation_id=question.correlation_id or
                           new_correlation_id())
        token = bind_correlation_id(question.correlation_id)
        try:
            answer = await self._answer(question, preview)
            answer = await self._past_review(await self._while_first_syncs_run(answer))
            return await self._record(answer)
        finally:
            reset_correlation_id(token)

    async def _answer(self, question: Question, preview: TextSink | None) -> Answer:
        mode, arm = self._route(question)
        offline = self._s.circuit is not None and not self._s.circuit.allows_calls()
        if offline:  # a dead key or spent budget: no call could succeed for now
            mode, arm = Mode.FAST, ""
        run = _Run(time.perf_counter(), {}, {}, {})
        try:
            answer = await self._stages(question, mode, run, preview, offline)
        except SiftError as exc:
            log.error("question failed: %s", exc)
            answer = Answer(tr(exc.user_message), AnswerStatus.ERROR, question, mode=mode)
        except Exception:
            log.exception("question failed unexpectedly")
            answer = Answer(tr(messages.INTERNAL_ERROR), AnswerStatus.ERROR, question, mode=mode)
        answer = await self._police(answer)
        run.timings["total"] = round((time.perf_counter() - run.started) * 1000, 2)
        return replace(answer, timings_ms=run.timings, usage=run.usage, models=run.models,
                       llm_provider=self._config.models.provider if run.models else "",
                       ab_arm=arm)

    async def _stages(self, question: Question, mode: Mode, run: _Run,
                      preview: TextSink | None, offline: bool = False) -> Answer:
        s = self._s
        # An image is only understood by the model: its search phrases come from it.
        use_llm = not offline and (mode is Mode.ACCURATE or bool(question.history) or
                                   bool(question.images))
        mark = time.perf_counter()
        # The hidden documents are read while the question is understood (usually a model
        # call), so that database trip is off the answer's critical path.
        hidden = asyncio.create_task(hidden_documents(s.priors))
        beside: _Beside | None = None
        languages = await self._languages(question)
        try:
            # In another language than the documents, the search waits for the model's
            # phrases in theirs.
            if use_llm and self._understands_beside(question) and not differs(*languages):
                beside = self._beside(question, run, languages)
                understood = replace(passthrough(question), language=languages[0],
                                     corpus_language=languages[1])  # searched as asked
            else:
                understood, _ = await self._understood(question, run, use_llm, languages)
                mark = time.perf_counter()
                if understood.intent is not Intent.KNOWLEDGE:
                    return self._direct(understood, question, mode)
            exclude = await hidden
            return await self._from_candidates(question, mode, run, preview, offline,
                                               understood, exclude, beside, mark)
        finally:
            hidden.cancel()  # a greeting or a failure does not wait for it (no-op once done)
            if beside is not None:
                beside.cancel()  # nor for the model's understanding (no-op once done)

    def _beside(self, question: Question, run: _Run, languages: tuple[str, str]) -> _Beside:
        intent: asyncio.Future[Intent] = asyncio.get_running_loop().create_future()

        def tell(known: Intent) -> None:
            if not intent.done():
                intent.set_result(known)

        task = asyncio.create_task(self._understood(question, run, True, languages,
                                                    on_intent=tell))
        return _Beside(task, intent)

    def _understands_beside(self, question: Question) -> bool:
        """A first question that is not small talk: its search need not wait for the model."""
        return (self._config.retrieval.understand_beside and not question.history
                and not question.images and rule_based(question) is None)

    async def _languages(self, question: Question) -> tuple[str, str]:
        """The question's language and the documents' ("" where unknown)."""
        corpus = await self._s.corpus.language() if self._s.corpus is not None else ""
        # In a thread: the detector's model loads on the first question (half a second).
        return await asyncio.to_thread(detect, question.text), corpus

    async def _understood(self, question: Question, run: _Run, use_llm: bool = True,
                          languages: tuple[str, str] = ("", ""),
                          on_intent: Callable[[Intent], None] | None = None
                          ) -> tuple[Understanding, Usage]:
        started = time.perf_counter()
        understood, usage = await self._s.understander.understand(
            question, use_llm, language=languages[0], corpus_language=languages[1],
            on_intent=on_intent)
        run.lap("understand", started)
        if usage.calls:
            run.usage["understand"] = usage
            run.models["understand"] = self._config.models.fast_model
        return understood, usage

    @staticmethod
    def _direct(understood: Understanding, question: Question, mode: Mode) -> Answer:
        return Answer(understood.direct_reply, AnswerStatus.ANSWERED, question,
                      search_query="", mode=mode)

    async def _from_candidates(self, question: Question, mode: Mode, run: _Run,
                               preview: TextSink | None, offline: bool,
                               understood: Understanding, exclude: tuple[str, ...],
                               beside: _Beside | None, mark: float) -> Answer:
        s = self._s

        # Always filtered: no groups matches nothing (an empty list is never "everything").
        filters = replace(SearchFilters.for_context(question.context), exclude_docs=exclude)
        candidates = await s.retriever.retrieve(understood.search_phrases, filters)
        candidates = await adjusted(s.priors, candidates)
        mark = run.lap("retrieve", mark)

        grader = s.accurate_grader if mode is Mode.ACCURATE and s.accurate_grader else s.fast_grader
        board = self._scoreboard(len(candidates), offline)
        grading = asyncio.create_task(grader.grade(understood.standalone, candidates, board))
        starting = None if board is None else asyncio.create_task(
            self._early(board, candidates, understood, question, preview, beside))
        early: EarlyAnswer[tuple[Draft, bool]] | None = None
        try:
            if beside is not None:  # small talk after all: the grades are not needed
                await asyncio.wait((grading, beside.intent), return_when=asyncio.FIRST_COMPLETED)
                if beside.intent.done() and beside.intent.result() is not Intent.KNOWLEDGE:
                    return self._direct(await beside.understood(), question, mode)
            graded = await grading
            early = _begun(starting)
            candidates = [replace(c, grade=graded.grades.get(c.chunk.chunk_id))
                          for c in candidates]
            mark = run.lap("grade", mark)
            if graded.usage.calls:
                run.usage["grade"] = graded.usage
                run.models["grade"] = self._config.models.fast_model

            answer = await self._written(question, mode, run, preview, offline, understood,
                                         candidates, graded, beside, mark, early)
        finally:
            grading.cancel()  # no-op once done
            if starting is not None:
                starting.cancel()
                early = early or _begun(starting)  # begun, but a failure came first
            if early is not None:
                await early.drop()  # no-op once taken
        answer = _searched_as_asked(answer, understood)
        if beside is not None:
            await beside.settled()
        return await self._with_reasons(answer, graded, run)

    def _scoreboard(self, total: int, offline: bool) -> Scoreboard | None:
        """Where grades are told as they are read, when the answer may begin before the last
        (rag/early_answer.py): a model writes it, and the setting allows it."""
        share = self._config.grading.early_answer_share
        if offline or self._s.generator is None or share >= 1.0 or not total:
            return None
        return Scoreboard(total, share)

    async def _early(self, board: Scoreboard, candidates: list[Candidate],
                     understood: Understanding, question: Question, preview: TextSink | None,
                     beside: _Beside | None) -> EarlyAnswer[tuple[Draft, bool]] | None:
        """The answer begun from the grades read once the board has enough of them."""
        await board.reached.wait()
        if beside is not None and await beside.intent is not Intent.KNOWLEDGE:
            return None
        # The grades still out count as off-topic for now: they keep their place in retrieval
        # order (so the floor is the same documents) and cannot raise the best grade. If they
        # do come back that low, this is the final selection too.
        graded = [replace(c, grade=board.grades.get(c.chunk.chunk_id, NOT_GRADED_YET))
                  for c in candidates]
        chosen = selected_in_order(select(graded, self._config.selection))
        if not chosen:
            return None
        return EarlyAnswer(chosen, lambda shown: self._generate(
            understood, chosen, question, shown, graded), preview)

    async def _with_reasons(self, answer: Answer, graded: GradingResult, run: _Run) -> Answer:
        """Score-first grades get their reasons (written meanwhile) before the answer is
        recorded, and the grading calls' tokens are all counted."""
        if not graded.pending:
            return answer
        await graded.settled()
        if graded.usage.calls:
            run.usage["grade"] = graded.usage
            run.models["grade"] = self._config.models.fast_model
        final = graded.grades
        return replace(answer, candidates=tuple(
            replace(c, grade=final.get(c.chunk.chunk_id, c.grade)) for c in answer.candidates))

    async def _written(self, question: Question, mode: Mode, run: _Run,
                       preview: TextSink | None, offline: bool, understood: Understanding,
                       candidates: list[Candidate], graded: GradingResult,
                       beside: _Beside | None, mark: float,
                       early: EarlyAnswer[tuple[Draft, bool]] | None = None) -> Answer:
        """Select from the graded candidates and write the answer (or keep the one begun
        early, when the final selection is the same)."""
        s = self._s
        if beside is not None:  # its intent, before anything is said ("what can you do?")
            if await beside.intent is not Intent.KNOWLEDGE:
                return self._direct(await beside.understood(), question, mode)
            mark = time.perf_counter()
        candidates = select(candidates, self._config.selection)
        chosen = selected_in_order(candidates)
        mark = run.lap("select", mark)
        base = Answer("", AnswerStatus.NO_ANSWER, question, understood.standalone, mode,
                      candidates=tuple(candidates))
        if not chosen:
            return replace(base, text=tr(messages.NO_ANSWER), suggestions=suggestions(candidates))

        if offline:
            draft, generation_failed = await s.fallback_extractive.generate(
                "", chosen, pool=candidates), True
        else:
            taken = await early.take(chosen) if early is not None else None
            draft, generation_failed = taken if taken is not None else await self._generate(
                understood, chosen, question, preview, candidates)
        run.lap("generate", mark)
        if draft.usage.calls:
            run.usage["generate"] = draft.usage
            run.models["generate"] = draft.model or self._config.models.answer_model
        if draft.no_answer:
            return replace(base, text=tr(messages.NO_ANSWER), suggestions=suggestions(candidates))
        cited = {c.chunk_id for c in draft.citations}
        degraded = graded.failures > 0 or generation_failed
        return replace(
            base, text=draft.text, citations=draft.citations,
            status=AnswerStatus.DEGRADED if degraded else AnswerStatus.ANSWERED,
            candidates=tuple(replace(c, cited=c.chunk.chunk_id in cited) for c in candidates),
            extractive=draft.extractive, uncited_claims=draft.uncited_claims)

    async def _generate(self, understood: Understanding, chosen: Sequence[Candidate],
                        question: Question, preview: TextSink | None,
                        pool: Sequence[Candidate]) -> tuple[Draft, bool]:
        """`pool`: every candidate retrieved, which weighs the question's terms for excerpts."""
        standalone = understood.standalone
        if self._s.generator is None:
            return await self._s.extractive.generate(standalone, chosen, pool=pool,
                                                     subject=understood.subject), False
        if preview is not None:
            preview = PolicedPreview(self._policy, [c.chunk.url for c in chosen], preview).show
        try:
            return await self._s.generator.generate(standalone, chosen, question.history,
                                                    preview, question.images,
                                                    language=understood.language), False
        except LLMError as exc:
            # The excerpts are still worth showing; the answer says plainly what happened.
            log.error("answer model failed (%s), falling back to excerpts: %s", exc.kind, exc)
            return await self._s.fallback_extractive.generate(
                standalone, chosen, pool=pool, subject=understood.subject), True

    async def _police(self, answer: Answer) -> Answer:
        """Off-policy links made inert; an answer that leaks the prompts becomes excerpts."""
        policy = self._policy
        verdict = policy.police(answer.text, [c.url for c in answer.citations])
        if not verdict.leaked:
            return replace(answer, text=verdict.text)
        log.warning("the answer repeated the system prompt or its canary; sending excerpts")
        clean = [c for c in selected_in_order(answer.candidates)
                 if not policy.leaks(f"{c.chunk.title}\n{c.chunk.section}\n{c.chunk.text}")]
        draft = await self._s.withheld_extractive.generate(answer.search_query, clean,
                                                           pool=answer.candidates)
        if draft.no_answer:
            return replace(answer, text=tr(messages.WITHHELD_NOTE), citations=(),
                           status=AnswerStatus.DEGRADED, extractive=True)
        urls = [c.url for c in draft.citations]
        cited = {c.chunk_id for c in draft.citations}
        return replace(
            answer, text=policy.links(draft.text, urls), citations=draft.citations,
            status=AnswerStatus.DEGRADED, extractive=True, uncited_claims=False,
            candidates=tuple(replace(c, cited=c.chunk.chunk_id in cited)
                             for c in answer.candidates))

    async def _while_first_syncs_run(self, answer: Answer) -> Answer:
        """A no-answer while a source's first sync runs says the knowledge base is still being
        read, and is recorded as such, so the console does not count it as a gap."""
        syncs = self._s.syncs
        if answer.status is not AnswerStatus.NO_ANSWER or syncs is None:
            return answer
        try:
            if not await asyncio.to_thread(syncs.first_syncs_running):
                return answer
        except Exception:
            # The plain no-answer is still true; the log keeps the cause for the operator.
            log.exception("could not tell whether a first sync is running")
            return answer
        return replace(answer, status=AnswerStatus.NOT_INDEXED, text=tr(messages.NOT_INDEXED_YET),
                       suggestions=())

    async def _past_review(self, answer: Answer) -> Answer:
        """An answer citing a document past its review date still stands, and says which
        source is unverified since when (docs/answers-loop.md)."""
        reviews = self._s.reviews
        if reviews is None or not answer.citations:
            return answer
        try:
            overdue = await asyncio.to_thread(reviews.overdue,
                                              [c.doc_id for c in answer.citations])
        except Exception:
            log.exception("could not read the cited documents' review dates")
            return answer
        notes = [messages.unverified_note(c.n, overdue[c.doc_id]) for c in answer.citations
                 if c.doc_id in overdue]
        if not notes:
            return answer
        return replace(answer, text=answer.text.rstrip() + "\n\n" + "\n".join(notes))

    async def _record(self, answer: Answer) -> Answer:
        if self._recorder is None:
            return answer
        try:
            interaction_id = await self._recording.blocking("recording the answer",
                                                            self._recorder.record, answer)
        except Exception:
            # The person still gets the answer; the log keeps the cause for the operator.
            log.exception("could not record the answer (%s); it is given unrecorded",
                          answer.status)
            return answer
        return replace(answer, interaction_id=interaction_id)


def _searched_as_asked(answer: Answer, understood: Understanding) -> Answer:
    """Asked in another language than the documents' and searched only in it (no model to
    add phrases in theirs): the answer says that asking in theirs finds more."""
    if not differs(understood.language, understood.corpus_language) or understood.across or \
            answer.status is AnswerStatus.ERROR:
        return answer
    name = display_name(understood.corpus_language, current())
    note = "_" + tr(messages.RETRIEVAL_LANGUAGE_NOTE).format(language=name) + "_"
    return replace(answer, text=f"{answer.text.rstrip()}\n\n{note}")


class PolicedPreview:
    """Previews pass the output policy too; after a leak, no further preview goes out."""

    def __init__(self, policy: OutputPolicy, urls: Sequence[str], sink: TextSink) -> None:
        self._policy = policy
        self._urls = tuple(urls)
        self._sink = sink
        self._stopped = False

    async def show(self, text: str) -> None:
        if self._stopped:
            return
        if self._policy.leaks(text):
            self._stopped = True
            return
        shown = self._policy.links(self._policy.hold_back(text), self._urls)
        if shown:
            await self._sink(shown)


def _begun(starting: asyncio.Task[EarlyAnswer[tuple[Draft, bool]] | None] | None
           ) -> EarlyAnswer[tuple[Draft, bool]] | None:
    """The early answer, if it had begun by the time every grade was in."""
    if starting is None or not starting.done() or starting.cancelled():
        return None
    return None if starting.exception() is not None else starting.result()
