"""`sift eval --languages DIR`: the questions asked in other languages, searched as asked and
with the understanding step's search phrases in the documents' language (docs/languages.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from evaluation.dataset import EvalQuery, EvalSet, _bad, _with_ids
from evaluation.runner import ModeResult, Plan, QueryResult, Runner, ranked
from evaluation.summary import ModeSummary, summarise
from rag.language import CorpusLanguage, detect
from rag.ports import LanguageCounts
from rag.retrieve import Retriever
from rag.types import Question
from rag.understand import Understander

AS_ASKED, TRANSLATED = "as asked", "phrases in the documents' language"
MODE = "hybrid"  # what a question retrieves with before grading


@dataclass(frozen=True)
class LanguageRow:
    """Hybrid retrieval of one language's questions, one way of searching them."""

    language: str
    search: str  # AS_ASKED or TRANSLATED
    questions: int
    detected: int  # questions the detector gave this language (the others: unsure)
    summary: ModeSummary | None  # None: the phrases need a model
    corpus_language: str = ""


def load_translations(root: Path, dataset: EvalSet) -> dict[str, dict[str, str]]:
    """`<language>.jsonl` files of {_id, text}: the dataset's questions in that language
    (so its qrels apply), by language, then question id."""
    files = sorted(root.glob("*.jsonl")) if root.is_dir() else []
    if not files:
        raise _bad(root, "no <language>.jsonl files of translated questions")
    ids = {q.query_id for q in dataset.queries}
    found: dict[str, dict[str, str]] = {}
    for path in files:
        texts = {str(item["_id"]): str(item.get("text") or "").strip()
                 for item in _with_ids(path)}
        unknown = sorted(set(texts) - ids)
        if unknown:
            raise _bad(path, f"question {unknown[0]} is not one of {dataset.name}'s")
        found[path.stem] = {i: t for i, t in texts.items() if t}
    return found


def asked_in(translations: dict[str, dict[str, str]],
             queries: Sequence[EvalQuery]) -> dict[str, tuple[EvalQuery, ...]]:
    """The questions being asked (after --limit), in each language that has them."""
    return {language: tuple(replace(q, text=texts[q.query_id]) for q in queries
                            if q.query_id in texts)
            for language, texts in translations.items()}


async def by_language(translations: dict[str, tuple[EvalQuery, ...]], plan: Plan,
                      retriever: Retriever, understander: Understander | None,
                      counts: LanguageCounts, ks: Sequence[int]) -> tuple[LanguageRow, ...]:
    """Each language's questions searched as asked and, with a model, with its phrases."""
    corpus = await CorpusLanguage(counts).language()
    runner = Runner(replace(plan, modes=(MODE,)), retriever, None)
    rows: list[LanguageRow] = []
    for language, queries in translations.items():
        detected = sum(1 for q in queries if detect(q.text) == language)
        asked = [await runner.ask(q) for q in queries]
        rows.append(LanguageRow(language, AS_ASKED, len(queries), detected,
                                _summary(asked, ks), corpus))
        translated = None
        if understander is not None:
            translated = _summary([await _with_phrases(q, understander, retriever, plan,
                                                       corpus) for q in queries], ks)
        rows.append(LanguageRow(language, TRANSLATED, len(queries), detected, translated,
                                corpus))
    return tuple(rows)


async def _with_phrases(query: EvalQuery, understander: Understander, retriever: Retriever,
                        plan: Plan, corpus: str) -> QueryResult:
    """The question searched as the pipeline searches it: the model's phrases (in the
    documents' language when the question's differs) and the question itself."""
    understood, _ = await understander.understand(
        Question(query.text), True, language=detect(query.text), corpus_language=corpus)
    candidates = await retriever.retrieve(understood.search_phrases, None, limit=plan.depth)
    return QueryResult(query, {MODE: ModeResult(ranked(candidates),
                                                tuple(c.chunk.doc_id for c in candidates),
                                                0.0)})


def _summary(results: list[QueryResult], ks: Sequence[int]) -> ModeSummary | None:
    return summarise(results, (MODE,), ks).modes.get(MODE)


def language_table(rows: Sequence[LanguageRow], ks: Sequence[int]) -> list[str]:
    """Markdown: recall@k, MRR@10 and nDCG@10 per language and way of searching."""
    head = ["language", "search", "questions", "detected", *(f"recall@{k}" for k in ks),
            "MRR@10", "nDCG@10"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for row in rows:
        m = row.summary
        figures = ["needs a model"] + [""] * (len(ks) + 1) if m is None else \
            [*(f"{m.recall[k]:.3f}" for k in ks), f"{m.mrr:.3f}", f"{m.ndcg:.3f}"]
        lines.append("| " + " | ".join([row.language, row.search, str(row.questions),
                                        str(row.detected), *figures]) + " |")
    corpus = rows[0].corpus_language if rows else ""
    return [*lines, "", f"Hybrid retrieval; the documents are in {corpus or 'an unknown language'}"
            "; \"detected\": questions the detector gave that language (the rest are searched "
            "as asked even with a model)."]


def language_json(rows: Sequence[LanguageRow]) -> list[dict[str, object]]:
    return [{"language": r.language, "search": r.search, "questions": r.questions,
             "detected": r.detected, "corpus_language": r.corpus_language,
             "recall": None if r.summary is None else
             {str(k): round(v, 4) for k, v in r.summary.recall.items()},
             "mrr": None if r.summary is None else round(r.summary.mrr, 4),
             "ndcg": None if r.summary is None else round(r.summary.ndcg, 4)} for r in rows]
