"""Retrieval per language on the AWS dev set: `sift eval --languages` without a model, then
against a fake Claude whose search phrases are the English originals (a perfect translation).

Run:  .venv/bin/python -m bench.eval_languages [--dataset ../shared/eval/aws-docs]
      [--languages bench/languages/aws-docs] [--out DIR]

The first run is what fast mode has: the German and French questions searched as asked. The
second proves the phrase path end to end (the understanding request, its phrases, their
search) with the best a model could do, the English question itself as the phrase; with a
real key (SIFT_ANTHROPIC_API_KEY set), `sift eval --languages` gives the model's own figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

from bot.cli import main
from tests.fakes.anthropic_server import FakeAnthropic

ROOT = Path(__file__).resolve().parent.parent


def _phrases(dataset: Path, languages: Path) -> dict[str, list[str]]:
    english = {(item := json.loads(line))["_id"]: item["text"]
               for line in (dataset / "queries.jsonl").read_text(encoding="utf-8").splitlines()
               if line.strip()}
    found: dict[str, list[str]] = {}
    for path in sorted(languages.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                found[item["text"]] = [english[item["_id"]]]
    return found


def _eval(dataset: Path, languages: Path, out: Path) -> list[dict[str, object]]:
    code = main(["eval", str(dataset), "--modes", "bm25,hybrid", "--languages", str(languages),
                 "--json", str(out / "report.json"), "--report", str(out / "report.md")])
    if code:
        raise SystemExit(code)
    return list(json.loads((out / "report.json").read_text(encoding="utf-8"))["languages"])


async def _with_fake(dataset: Path, languages: Path, out: Path) -> list[dict[str, object]]:
    fake = FakeAnthropic()
    fake.phrases_in_corpus = _phrases(dataset, languages)
    await fake.start()
    os.environ.update(SIFT_ANTHROPIC_API_KEY="sk-fake", SIFT_ANTHROPIC_BASE_URL=fake.url)
    try:
        return await asyncio.to_thread(_eval, dataset, languages, out)
    finally:
        await fake.stop()


def main_(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared/eval/aws-docs")
    parser.add_argument("--languages", type=Path, default=ROOT / "bench/languages/aws-docs")
    parser.add_argument("--out", type=Path, default=Path("eval-languages"))
    args = parser.parse_args(argv)
    for name in ("SIFT_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"):
        os.environ.pop(name, None)
    alone = _eval(args.dataset, args.languages, args.out / "no-model")
    faked = asyncio.run(_with_fake(args.dataset, args.languages, args.out / "fake-claude"))
    print("\nlanguage | search | detected | recall@5 | recall@10 | MRR@10 | nDCG@10")
    for label, rows in (("no model", alone), ("fake Claude", faked)):
        for row in rows:
            if row["recall"] is None:
                continue
            recall = row["recall"]
            assert isinstance(recall, dict)
            print(f"{row['language']} | {row['search']} ({label}) | {row['detected']}/"
                  f"{row['questions']} | {recall['5']:.3f} | {recall['10']:.3f} | "
                  f"{row['mrr']:.3f} | {row['ndcg']:.3f}")


if __name__ == "__main__":
    main_()
