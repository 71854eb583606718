"""Does beginning the answer early change what it is written from? The AWS dev set's graded
mode with a fake Claude that takes a real model's time, with and without the early answer.

Run:  .venv/bin/python -m bench.early_answer_selection [--dataset ../shared/eval/aws-docs]
      [--share 0.75] [--first-token-ms 500] [--per-token-ms 8] [--jitter 0.3] [--out DIR]

`sift eval DATASET --modes graded` twice against one fake (grades by term overlap, each reply
slowed by a time to the first token plus a time per output token, scaled by a seeded factor
in [1 - jitter, 1 + jitter]): once with `[grading] early_answer_share = 1` (the answer begun
after every grade), once with `--share` (0.75). Per question it compares nDCG@10 of the excerpts
passed to the answer model, in their order, and counts the early answers kept and dropped (a
kept one had exactly the final selection). Issue 67's rule: selection unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any

from bot.cli import main
from tests.fakes.anthropic_server import FakeAnthropic, ModelLatency

ROOT = Path(__file__).resolve().parent.parent


class Outcomes(logging.Handler):
    """Counts rag.early_answer's kept and dropped lines."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.kept = self.dropped = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.kept += message.startswith("early answer kept")
        self.dropped += message.startswith("early answer dropped")


def _eval(dataset: Path, out: Path, share: float) -> dict[str, Any]:
    os.environ["SIFT_GRADING__EARLY_ANSWER_SHARE"] = str(share)
    out.mkdir(parents=True, exist_ok=True)
    code = main(["eval", str(dataset), "--modes", "graded", "--json", str(out / "report.json")])
    if code:
        raise SystemExit(code)
    return dict(json.loads((out / "report.json").read_text(encoding="utf-8")))


async def _runs(args: argparse.Namespace) -> list[tuple[float, dict[str, Any], Outcomes]]:
    fake = FakeAnthropic()
    fake.model_latency = ModelLatency(args.first_token_ms / 1000, args.per_token_ms / 1000,
                                      jitter=args.jitter)
    await fake.start()
    os.environ.update(SIFT_ANTHROPIC_API_KEY="sk-fake", SIFT_ANTHROPIC_BASE_URL=fake.url)
    runs = []
    try:
        for share in (1.0, args.share):
            outcomes = Outcomes()
            logging.getLogger("rag.early_answer").addHandler(outcomes)
            try:
                report = await asyncio.to_thread(_eval, args.dataset, args.out / str(share),
                                                 share)
            finally:
                logging.getLogger("rag.early_answer").removeHandler(outcomes)
            runs.append((share, report, outcomes))
    finally:
        await fake.stop()
    return runs


def ndcg(report: dict[str, Any]) -> dict[str, float]:
    """Each question's nDCG@10 of the excerpts passed to the answer model, in their order."""
    return {row["query_id"]: row["ndcg"]["graded"] for row in report["per_query"]
            if "graded" in row["ndcg"]}


def main_(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared/eval/aws-docs")
    parser.add_argument("--first-token-ms", type=float, default=500.0)
    parser.add_argument("--per-token-ms", type=float, default=8.0)
    parser.add_argument("--jitter", type=float, default=0.3)
    parser.add_argument("--share", type=float, default=0.75,
                        help="the early_answer_share measured against 1 (default 0.75)")
    parser.add_argument("--out", type=Path, default=Path("eval-early-answer"))
    args = parser.parse_args(argv)
    os.environ.setdefault("SIFT_DATA_DIR", str((args.out / "data").absolute()))
    try:
        (_, before, _), (share, after, outcomes) = asyncio.run(_runs(args))
    finally:
        main(["weaviate", "stop"])
    first, second = ndcg(before), ndcg(after)
    same = sum(first[q] == second.get(q) for q in first)
    print("\nearly_answer_share | nDCG@10 (graded) | questions | same nDCG as with 1 | "
          "early answers kept / dropped")
    print(f"1 | {before['modes']['graded']['ndcg@10']:.3f} | {len(first)} | – | –")
    print(f"{share} | {after['modes']['graded']['ndcg@10']:.3f} | {len(second)} | "
          f"{same} of {len(first)} | {outcomes.kept} / {outcomes.dropped}")


if __name__ == "__main__":
    main_()
