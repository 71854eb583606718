"""`sift eval`: retrieval and answer quality on a dataset, as a Markdown report, chart and JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.plain_progress import PlainProgress
from rag.errors import InputError

if TYPE_CHECKING:  # the heavy modules load inside the handler
    from rich.progress import Progress

    from bot.app import App
    from evaluation.dataset import EvalSet
    from evaluation.evaluation import Harness, Options, Report
    from evaluation.runner import QueryResult

MODES = ("bm25", "vector", "hybrid", "graded")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "eval", help="measure retrieval and answer quality on a dataset",
        description="Index a BEIR-style dataset (corpus.jsonl, queries.jsonl, qrels.tsv) into "
        "its own collection (reused while nothing changed), or take a YAML/JSONL list of "
        "{question, expected_answer, expected_doc_ids} asked of the synced sources; then "
        "report recall@k, MRR@10 and nDCG@10 per mode and, with an LLM configured, judged "
        "answer quality, with tokens and latency per stage.")
    parser.add_argument("dataset", type=Path, metavar="DATASET",
                        help="a BEIR directory, or a .yaml/.jsonl question file")
    parser.add_argument("--k", default="5,10,20", metavar="K1,K2",
                        help="cut-offs for recall@k (default: 5,10,20)")
    parser.add_argument("--modes", default=",".join(MODES), metavar="M1,M2",
                        help=f"any of {', '.join(MODES)} (default: all)")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N questions")
    parser.add_argument("--json", type=Path, metavar="OUT", dest="json_out",
                        help="where to write the JSON results")
    parser.add_argument("--report", type=Path, metavar="OUT.md",
                        help="where to write the Markdown report (the PNG chart goes beside it)")
    parser.add_argument("--rebuild", action="store_true",
                        help="re-index the corpus even if its collection is up to date")
    parser.add_argument("--concurrency", type=int, default=1, metavar="N",
                        help="questions in flight at once (default 1: undisturbed latencies)")
    parser.add_argument("--judge-model", default="", metavar="MODEL",
                        help="model for the answer judge (default: the answer model)")
    parser.add_argument("--simulate-feedback", type=int, default=0, metavar="N",
                        help="replay the questions N times with votes simulated from the "
                        "qrels, and report nDCG@10 of the graded mode before and after the "
                        "learned document prior, for honest, random, inverted and one lying "
                        "account's votes (needs the graded mode): the mean gain over "
                        "--feedback-seeds draws, and the worst one")
    parser.add_argument("--feedback-noise", type=float, default=0.1, metavar="P",
                        help="chance an honest simulated vote is flipped (default 0.1)")
    parser.add_argument("--feedback-seeds", type=int, default=5, metavar="K",
                        help="repeat each kind of voter's replay with K random draws (seeds "
                        "17, 18, ...) and report the mean and the worst (default 5)")
    parser.add_argument("--languages", type=Path, metavar="DIR",
                        help="a folder of <language>.jsonl files ({_id, text}: the dataset's "
                        "questions translated): hybrid retrieval per language, searched as "
                        "asked and, with a model, with search phrases in the documents' "
                        "language (docs/languages.md)")
    parser.set_defaults(handler=_eval)


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(sorted({int(p) for p in text.split(",") if p.strip()}))
    except ValueError as exc:
        raise InputError(f"bad --k {text!r}", user_message=f"--k takes whole numbers "
                         f"separated by commas, not {text!r}.") from exc
    if not values or values[0] < 1:
        raise InputError(f"bad --k {text!r}", user_message="--k values must be 1 or more.")
    return values


def _modes(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    unknown = [m for m in chosen if m not in MODES]
    if unknown or not chosen:
        raise InputError(f"bad --modes {text!r}", user_message=f"--modes takes any of "
                         f"{', '.join(MODES)}, not {', '.join(unknown) or 'nothing'}.")
    return tuple(m for m in MODES if m in chosen)


class _Bars:
    """Rich progress bars: documents indexed (with chunks written), then questions asked."""

    def __init__(self, progress: Progress | PlainProgress, documents: int,
                 questions: int) -> None:
        self._progress = progress
        self._totals = {"indexing": documents, "questions": questions}
        self._tasks: dict[str, Any] = {}
        self._chunks = 0

    def _task(self, name: str) -> Any:  # rich's TaskID, or PlainProgress's int
        if name not in self._tasks:  # created on first use: a reused index shows no bar
            self._tasks[name] = self._progress.add_task(name, total=self._totals[name],
                                                        detail="")
        return self._tasks[name]

    def documents(self, count: int) -> None:
        self._progress.advance(self._task("indexing"), count)

    def chunks(self, count: int) -> None:
        self._chunks += count
        self._progress.update(self._task("indexing"), detail=f"{self._chunks} chunks")

    def question(self, _: QueryResult) -> None:
        self._progress.advance(self._task("questions"))


def _eval(args: argparse.Namespace) -> int:
    from bot.app import App, load_settings
    from evaluation import dataset as datasets
    from evaluation.evaluation import Options, eval_dir
    from evaluation.languages import load_translations

    data = datasets.load(args.dataset)
    translations = load_translations(args.languages, data) if args.languages else None
    options = Options(ks=_ints(args.k), modes=_modes(args.modes), limit=args.limit,
                      concurrency=max(1, args.concurrency), rebuild=args.rebuild,
                      judge_model=args.judge_model,
                      simulate_feedback=max(0, args.simulate_feedback),
                      feedback_noise=min(1.0, max(0.0, args.feedback_noise)),
                      feedback_seeds=max(1, args.feedback_seeds), languages=translations)
    app = App(load_settings(args.config))
    harness = app.evaluation_harness()
    out = eval_dir(harness, data)
    report_path = args.report or out / "report.md"
    json_path = args.json_out or out / "report.json"
    report = asyncio.run(_run(app, harness, data, options))
    _write(report, report_path, json_path)
    return 0


async def _run(app: App, harness: Harness, data: EvalSet, options: Options) -> Report:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from bot.runtime import weaviate_running
    from evaluation.evaluation import evaluate

    columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[detail]}"))
    questions = min(len(data.queries), options.limit or len(data.queries))
    async with weaviate_running(app.weaviate_run):
        console = Console(stderr=True, markup=False)
        shown = Progress(*columns, console=console) if console.is_terminal else PlainProgress()
        with shown as progress:
            bars = _Bars(progress, len(data.corpus or ()), questions)
            return await evaluate(harness, data, options, bars, bars.question)


def _write(report: Report, report_path: Path, json_path: Path) -> None:
    from evaluation.report import retrieval_table, to_json, to_markdown, write_chart

    report_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    chart = report_path.with_suffix(".png")
    try:
        write_chart(report, chart)
        chart_name: str | None = chart.name
    except ImportError:
        chart_name = None
        print("sift: matplotlib is missing (install the 'eval' extra): no chart written")
    report_path.write_text(to_markdown(report, chart_name), encoding="utf-8")
    json_path.write_text(json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    index = report.index
    how = (f"reused ({index.seconds:.1f} s)" if index.reused
           else f"built in {index.seconds:.0f} s"
           + (f", resuming with {index.resumed} documents indexed" if index.resumed else ""))
    print(f"\n{report.dataset}: {report.queries} questions; index {index.collection} {how}\n")
    print("\n".join(retrieval_table(report)))
    answers = report.results.answers
    if answers is not None:
        print(f"\nanswers: faithfulness {answers.faithfulness or 0:.3f}, accuracy "
              f"{answers.accuracy or 0:.2f} (0-2), refusal rate {answers.refusal_rate:.3f}")
    if report.feedback:
        from evaluation.report import feedback_table

        print("\n" + "\n".join(feedback_table(report.feedback, report.feedback_seconds)))
    if report.languages:
        from evaluation.languages import language_table

        print("\n" + "\n".join(language_table(report.languages, report.settings.ks)))
    if report.note:
        print(f"\n{report.note}")
    print(f"\nReport: {report_path}\nChart:  {chart if chart_name else '(none)'}\n"
          f"JSON:   {json_path}")
