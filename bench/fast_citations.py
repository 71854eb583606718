"""Fast mode's citations: irrelevant documents cited, uncovered questions answered, and recall.

Run:  .venv/bin/python -m bench.fast_citations [--sets sample,aws] [--tree OTHER_CHECKOUT ...]
                                               [--workdir /tmp/sift-bench-citations] [--json F]

Asks every question in fast mode (no LLM: the heuristic grader and quoted excerpts) and
compares what each answer cites with the documents labelled relevant:

- sample: the sample knowledge base (examples/knowledge, synced by the folder connector as
  `sift sync` does) and bench/sample_questions.yaml, whose questions name the documents that
  answer them, and a dozen the sample does not cover. Asked as a member of every group the
  sample uses.
- aws: the 40 questions of ../shared/eval/aws-docs over its 2,757 pages, built by `sift
  eval`'s indexing (several minutes of CPU the first time; kept in --workdir and reused). The
  qrels name one gold page per question, so a cited page other than the gold one counts as
  irrelevant even where it might help: the figure is an upper bound.

Per set: the share of answers given whose citations include an irrelevant document, the share
of not-covered questions answered anyway, recall (the share of covered questions whose answer
cites a relevant document), whether the first citation is a relevant one, and citations per
answer. `--tree DIR` measures another checkout (e.g. main before a change, from `git archive`)
against the same indexes in the same run; this script and the question set are copied into it
when it lacks them. Each checkout is measured in a process of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr

if TYPE_CHECKING:
    from bot.settings import Settings
    from evaluation.runner import QueryResult

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = Path(__file__).resolve().parent / "sample_questions.yaml"
AWS = ROOT.parent / "shared" / "eval" / "aws-docs"
SAMPLE_COLLECTION = "BenchCitationsSample"
GROUPS = ("public", "engineering", "security")  # every group the sample's documents use
SETS = ("sample", "aws")


@dataclass(frozen=True)
class Asked:
    """One question's answer, as the figures need it."""

    query_id: str
    question: str
    relevant: tuple[str, ...]  # empty: the set does not cover it
    status: str
    cited: tuple[str, ...]  # document ids, in citation order


@dataclass(frozen=True)
class Figures:
    questions: int
    answered: int  # answers given (answered or degraded), covered or not
    irrelevant_share: float  # of the answers given, those citing an irrelevant document
    not_covered: int
    not_covered_answered_share: float
    recall: float  # covered questions whose answer cites a relevant document
    first_relevant_share: float  # of the covered questions answered: [1] is relevant
    citations_per_answer: float


def figures(asked: Sequence[Asked]) -> Figures:
    given = [a for a in asked if a.status in ("answered", "degraded")]
    covered = [a for a in asked if a.relevant]
    uncovered = [a for a in asked if not a.relevant]
    covered_given = [a for a in given if a.relevant]

    def share(part: int, whole: int) -> float:
        return round(part / whole, 3) if whole else 0.0

    return Figures(
        questions=len(asked), answered=len(given),
        irrelevant_share=share(sum(1 for a in given if set(a.cited) - set(a.relevant)),
                               len(given)),
        not_covered=len(uncovered),
        not_covered_answered_share=share(sum(1 for a in uncovered if a in given),
                                         len(uncovered)),
        recall=share(sum(1 for a in covered if set(a.cited) & set(a.relevant)), len(covered)),
        first_relevant_share=share(sum(1 for a in covered_given if a.cited[0] in a.relevant),
                                   len(covered_given)),
        citations_per_answer=round(sum(len(a.cited) for a in given) / len(given), 2)
        if given else 0.0)


# --- Measuring: one checkout, in its own process ------------------------------------------


def _settings(workdir: Path, url: str, grpc: str, key: str, collection: str) -> Settings:
    from bot.settings import (
        SAMPLE_KNOWLEDGE,
        Settings,
        SourceSettings,
        SyncSettings,
        WeaviateSettings,
    )

    return Settings(
        data_dir=workdir / "data", database_url=f"sqlite:///{workdir / 'state.db'}",
        weaviate_url=url, weaviate_api_key=SecretStr(key),
        weaviate=WeaviateSettings(grpc_url=grpc, collection=collection, insert_timeout_s=300),
        sync=SyncSettings(sync_on_start=False), anthropic_api_key=None,
        sources=[SourceSettings(name="sample", kind="folder", path=SAMPLE_KNOWLEDGE)])


async def _sample(args: argparse.Namespace) -> list[Asked]:
    from bot.app import App
    from evaluation.dataset import load
    from rag.types import AskContext, Mode, Question

    app = App(_settings(args.workdir, args.url, args.grpc, args.key, SAMPLE_COLLECTION))
    index = app.index()
    await index.connect()
    try:
        pipeline = app.pipeline(index)
        asked = []
        for query in load(QUESTIONS).queries:
            answer = await pipeline.answer(Question(
                query.text, AskContext(access_groups=GROUPS), mode=Mode.FAST))
            asked.append(Asked(query.query_id, query.text, tuple(query.relevant),
                               answer.status.value, tuple(c.doc_id for c in answer.citations)))
        return asked
    finally:
        await index.close()
        await app.aclose()


async def _aws(args: argparse.Namespace) -> list[Asked]:
    from bot.app import App
    from evaluation.dataset import load
    from evaluation.evaluation import Options, evaluate

    app = App(_settings(args.workdir, args.url, args.grpc, args.key, "SiftChunks"))
    results: list[QueryResult] = []
    try:
        await evaluate(app.evaluation_harness(), load(args.aws), Options(modes=("graded",)),
                       on_question=results.append)
    finally:
        await app.aclose()
    return [Asked(r.query.query_id, r.query.text, tuple(r.query.relevant),
                  r.answer.status.value, tuple(c.doc_id for c in r.answer.citations))
            for r in sorted(results, key=lambda r: r.query.query_id) if r.answer is not None]


def measure(args: argparse.Namespace) -> None:
    out: dict[str, list[dict[str, object]]] = {}
    for name in args.sets.split(","):
        asked = asyncio.run(_sample(args) if name == "sample" else _aws(args))
        out[name] = [asdict(a) for a in asked]
    args.out.write_text(json.dumps(out, indent=1), encoding="utf-8")


# --- Driving: the indexes once, then each checkout -----------------------------------------


async def _sync_sample(args: argparse.Namespace, url: str, grpc: str, key: str) -> None:
    from bot.app import App

    app = App(_settings(args.workdir, url, grpc, key, SAMPLE_COLLECTION))
    await asyncio.to_thread(app.database.upgrade)
    index = app.index()
    await index.connect()
    try:
        await app.sync_runner(index).run("sample")
    finally:
        await index.close()
        await app.aclose()


def _prepared(tree: Path) -> Path:
    """The checkout, with this script and the questions copied in when it lacks them."""
    for path in (Path(__file__), QUESTIONS):
        target = tree / "bench" / path.name
        if not target.exists():
            shutil.copy(path, target)
    return tree


def _measure_in(tree: Path, args: argparse.Namespace, server_args: list[str],
                out: Path) -> dict[str, list[Asked]]:
    own = tree / ".venv" / "bin" / "python"
    python = str(own) if own.exists() else sys.executable
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("SIFT_")
           and k != "ANTHROPIC_API_KEY"} | {"PYTHONPATH": str(tree), "SIFT_LOG_LEVEL": "WARNING"}
    subprocess.run([python, "-m", "bench.fast_citations", "--measure", "--sets", args.sets,
                    "--workdir", str(args.workdir), "--aws", str(args.aws), "--out", str(out),
                    *server_args],
                   cwd=_prepared(tree), env=env, check=True)
    raw = json.loads(out.read_text(encoding="utf-8"))
    return {name: [Asked(**{**a, "relevant": tuple(a["relevant"]), "cited": tuple(a["cited"])})
                   for a in rows] for name, rows in raw.items()}


def _print(label: str, name: str, f: Figures) -> None:
    print(f"{label:<40s} {name:<7s} {f.questions:>3d} q  answered {f.answered:>3d}  "
          f"irrelevant cited {f.irrelevant_share:6.1%}  not covered answered "
          f"{f.not_covered_answered_share:6.1%} (of {f.not_covered})  recall {f.recall:6.1%}  "
          f"[1] relevant {f.first_relevant_share:6.1%}  citations/answer "
          f"{f.citations_per_answer:.2f}", flush=True)


def drive(args: argparse.Namespace) -> None:
    from weaviate_server.install import find_binary
    from weaviate_server.process import ManagedWeaviate, free_ports

    binary = find_binary(_pinned_version(), None)
    if binary is None:
        raise SystemExit("no Weaviate binary: run `sift weaviate install` first")
    args.workdir.mkdir(parents=True, exist_ok=True)
    server = ManagedWeaviate(binary, args.workdir / "weaviate", free_ports())
    server.start(timeout_s=180)
    grpc = f"127.0.0.1:{server.ports.grpc}"
    server_args = ["--url", server.url, "--grpc", grpc, "--key", server.api_key]
    report: dict[str, dict[str, object]] = {}
    try:
        if "sample" in args.sets:
            asyncio.run(_sync_sample(args, server.url, grpc, server.api_key))
        trees = [ROOT, *(t.resolve() for t in args.tree)]
        for number, tree in enumerate(trees):
            measured = _measure_in(tree, args, server_args, args.workdir / f"run-{number}.json")
            for name, asked in measured.items():
                result = figures(asked)
                _print(str(tree), name, result)
                report[f"{tree}:{name}"] = {"figures": asdict(result),
                                           "answers": [asdict(a) for a in asked]}
    finally:
        server.stop()
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")


def _pinned_version() -> str:
    from bot.settings import WeaviateSettings

    return WeaviateSettings().version


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS), help="sample, aws, or both")
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="another checkout to measure against the same indexes")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/sift-bench-citations"))
    parser.add_argument("--aws", type=Path, default=AWS, help="the AWS dev set's folder")
    parser.add_argument("--json", type=Path, help="also write every answer's citations here")
    for hidden in ("--url", "--grpc", "--key", "--out"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.out:
        args.out = Path(args.out)
    if args.measure:
        measure(args)
    else:
        for name in [k for k in os.environ if k.upper().startswith("SIFT_")]:
            del os.environ[name]  # the figures are for the settings written here
        drive(args)


if __name__ == "__main__":
    main()
