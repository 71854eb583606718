"""`sift eval` end to end on a tiny generated dataset, real Weaviate, real embedder, fake Claude."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from tests.evaluation.tiny import MARKERS, write_beir
from tests.fakes.anthropic_server import FakeAnthropic
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
FIVE_SIXTHS = round(5 / 6, 4)


@pytest.fixture
def sift_env(tmp_path: Path, weaviate_server: ManagedWeaviate,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Settings for the CLI: the test Weaviate, a fresh data dir, no LLM unless a test adds one."""
    for name in list(os.environ):
        if name.startswith("SIFT_") or name == "ANTHROPIC_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.setenv("SIFT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SIFT_WEAVIATE_URL", weaviate_server.url)
    monkeypatch.setenv("SIFT_WEAVIATE__GRPC_URL", f"127.0.0.1:{weaviate_server.ports.grpc}")
    monkeypatch.setenv("SIFT_WEAVIATE_API_KEY", weaviate_server.api_key)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level  # the CLI configures logging for itself
    yield tmp_path
    root.handlers[:], root.level = handlers, level


def sift_eval(dataset: Path, out: Path, *extra: str) -> dict[str, Any]:
    report, results = out / "report.md", out / "results.json"
    code = main(["eval", str(dataset), "--json", str(results), "--report", str(report), *extra])
    assert code == 0
    assert report.with_suffix(".png").stat().st_size > 1000
    data: dict[str, Any] = json.loads(results.read_text(encoding="utf-8"))
    data["markdown"] = report.read_text(encoding="utf-8")
    return data


def first_hits(data: dict[str, Any], mode: str) -> list[int | None]:
    return [row["first_hit"][mode] for row in data["per_query"]]


def test_retrieval_figures_match_what_the_dataset_implies(sift_env: Path) -> None:
    dataset = write_beir(sift_env / "tiny")
    data = sift_eval(dataset, sift_env / "first")
    assert (data["dataset"], data["queries"], data["evaluated"]) == ("tiny", 6, 6)
    assert data["answers"] is None and "skipped" in data["answers_skipped"]
    index, modes = data["index"], data["modes"]
    assert not index["reused"] and index["collection"].startswith("Eval_tiny_")
    assert (index["documents"], index["chunks"]) == (12, 12)  # one short page, one chunk
    assert list(modes) == ["bm25", "vector", "hybrid", "graded"]
    rows = {row["query_id"]: row for row in data["per_query"]}
    assert set(rows["q2"]["first_hit"].values()) == {None}  # its document is not in the corpus
    assert rows["q1"]["first_hit"]["bm25"] == 1  # the only page with its rare keyword
    for mode in ("vector", "hybrid"):  # 12 chunks, depth 20: every page comes back
        m = modes[mode]
        assert (m["recall@20"], m["doc_recall@20"], m["documents"]) == (FIVE_SIXTHS,
                                                                          FIVE_SIXTHS, 12)
        hits = first_hits(data, mode)
        for k in (5, 10, 20):
            assert m[f"recall@{k}"] == round(sum(1 for h in hits if h and h <= k) / 6, 4)
        assert m["mrr@10"] == round(sum(1 / h for h in hits if h and h <= 10) / 6, 4)
    # Each answerable question names its page's distinctive words: worked out by hand, the
    # page comes first for BM25 and hybrid, so recall@5 and MRR@10 are both 5 of 6.
    for mode in ("bm25", "hybrid"):
        assert [rows[q]["first_hit"][mode] for q in ("q1", "q3", "q4", "q5", "q6")] == [1] * 5
        assert (modes[mode]["recall@5"], modes[mode]["mrr@10"]) == (FIVE_SIXTHS, FIVE_SIXTHS)
    # without an LLM the graded pool is the hybrid retrieval, graded by the heuristic
    assert modes["graded"]["pool_recall"] == modes["hybrid"]["recall@20"]
    assert "graded + selected (heuristic grader)" in data["markdown"]
    assert "| mode | recall@5 | recall@10 | recall@20 | MRR@10 | nDCG@10 |" in data["markdown"]

    again = sift_eval(dataset, sift_env / "second")
    assert again["index"]["reused"] and again["index"]["collection"] == index["collection"]
    assert again["index"]["build_seconds"] == index["build_seconds"]
    metrics = ("recall@5", "recall@10", "recall@20", "mrr@10", "ndcg@10", "precision")
    for mode in modes:
        assert {k: again["modes"][mode][k] for k in metrics} == {k: modes[mode][k]
                                                                 for k in metrics}


def collection_exists(server: ManagedWeaviate, name: str) -> bool:
    request = urllib.request.Request(f"{server.url}/v1/schema/{name}",
                                     headers={"Authorization": f"Bearer {server.api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=10):
            return True
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise


def test_a_changed_corpus_or_rebuild_builds_again(sift_env: Path,
                                                  weaviate_server: ManagedWeaviate) -> None:
    dataset = write_beir(sift_env / "tiny")
    first = sift_eval(dataset, sift_env / "a", "--modes", "bm25", "--limit", "1")
    rebuilt = sift_eval(dataset, sift_env / "b", "--modes", "bm25", "--limit", "1", "--rebuild")
    assert (first["index"]["reused"], rebuilt["index"]["reused"]) == (False, False)
    assert rebuilt["index"]["collection"] == first["index"]["collection"]
    assert list(rebuilt["modes"]) == ["bm25"] and rebuilt["queries"] == 1
    corpus = dataset / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("ninety days", "sixty days"))
    changed = sift_eval(dataset, sift_env / "c", "--modes", "bm25", "--limit", "1")
    assert not changed["index"]["reused"]
    assert changed["index"]["collection"] != first["index"]["collection"]
    # the superseded build is dropped with its marker; the new one stays
    assert not collection_exists(weaviate_server, first["index"]["collection"])
    assert collection_exists(weaviate_server, changed["index"]["collection"])
    markers = list((sift_env / "data" / "eval" / "tiny").glob("index-*.json"))
    assert len(markers) == 1


def marker_grade(question: str, document: str) -> tuple[float, str]:
    marker = next((m for q, m in MARKERS.items() if q in question), None)
    if marker is not None and marker in document.lower():
        return 0.9, "Answers the question."
    return 0.1, "Unrelated."


async def test_answer_metrics_with_a_judge(sift_env: Path, fake_anthropic: FakeAnthropic,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIFT_ANTHROPIC_API_KEY", "sk-test-key")
    monkeypatch.setenv("SIFT_ANTHROPIC_BASE_URL", fake_anthropic.url)
    fake_anthropic.grade_rule = marker_grade
    dataset = write_beir(sift_env / "tiny")
    data = await asyncio.to_thread(sift_eval, dataset, sift_env / "out")

    graded, answers, stages = data["modes"]["graded"], data["answers"], data["stages"]
    # exactly the gold page passes the grader for five questions; q2's page does not exist
    assert (graded["recall@5"], graded["mrr@10"], graded["precision"]) == (FIVE_SIXTHS,
                                                                          FIVE_SIXTHS, 1.0)
    q6_ndcg = 2 / (2 + 1 / math.log2(3))  # d08 (gain 2) found, d01 (gain 1) not selected
    assert graded["ndcg@10"] == round((4 + q6_ndcg) / 6, 4)
    assert answers["refusal_rate"] == round(1 / 6, 4) and answers["answered"] == 5
    assert answers["accuracy_counts"] == {"2": 5, "1": 0, "0": 1, "-1": 0}
    assert (answers["accuracy"], answers["faithfulness"]) == (round(10 / 6, 4), 1.0)
    assert answers["grading_precision"] == 1.0 and answers["judge_failures"] == 0
    assert stages["grade"]["calls"] == 12 and stages["understand"]["calls"] == 1
    assert stages["generate"]["calls"] == round(5 / 6, 2)
    assert stages["judge (evaluation only)"]["calls"] == round(10 / 6, 2)
    judged = fake_anthropic.calls("judge_accuracy")[0].body["messages"][0]["content"]
    assert "Reference answer:\nEvery ninety days." in judged

    # A knowledge team's question file, asked of an already synced collection.
    questions = sift_env / "team.yaml"
    questions.write_text(yaml.safe_dump([
        {"question": "How often do zephyrine signing keys rotate?",
         "expected_answer": "Every ninety days.", "expected_doc_ids": ["d01"]},
        {"question": "What is the airspeed of an unladen swallow?"}]))
    monkeypatch.setenv("SIFT_WEAVIATE__COLLECTION", data["index"]["collection"])
    team = await asyncio.to_thread(sift_eval, questions, sift_env / "team")
    assert (team["dataset"], team["queries"], team["evaluated"]) == ("team", 2, 1)
    assert team["index"]["reused"] and team["modes"]["graded"]["recall@5"] == 1.0
    assert team["answers"]["accuracy_counts"] == {"2": 1, "1": 0, "0": 0, "-1": 1}


def weaviate_call(server: ManagedWeaviate, method: str, path: str,
                  body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{server.url}{path}", data=data, method=method,
        headers={"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        text = reply.read()
    return json.loads(text) if text else None


def test_an_interrupted_build_resumes_and_redoes_only_what_is_missing_or_stale(
        sift_env: Path, weaviate_server: ManagedWeaviate) -> None:
    dataset = write_beir(sift_env / "tiny")
    first = sift_eval(dataset, sift_env / "a", "--modes", "bm25,hybrid")
    collection = first["index"]["collection"]
    # What a kill mid-build leaves: no marker, a page never written, a page of another version
    for marker in (sift_env / "data" / "eval" / "tiny").glob("index-*.json"):
        marker.unlink()
    listed = weaviate_call(weaviate_server, "GET", f"/v1/objects?class={collection}&limit=100")
    by_doc = {o["properties"]["doc_id"]: o["id"] for o in listed["objects"]}
    weaviate_call(weaviate_server, "DELETE", f"/v1/objects/{collection}/{by_doc['d02']}")
    weaviate_call(weaviate_server, "PATCH", f"/v1/objects/{collection}/{by_doc['d03']}",
                  {"class": collection, "properties": {"content_hash": "an older version"}})

    resumed = sift_eval(dataset, sift_env / "b", "--modes", "bm25,hybrid")
    index = resumed["index"]
    assert (index["reused"], index["collection"], index["resumed"]) == (False, collection, 10)
    assert (index["documents"], index["chunks"]) == (12, 12)
    assert "resumed: 10 documents were already indexed" in resumed["markdown"]
    hashes = {o["properties"]["doc_id"]: o["properties"]["content_hash"] for o in weaviate_call(
        weaviate_server, "GET", f"/v1/objects?class={collection}&limit=100")["objects"]}
    assert "an older version" not in hashes.values() and len(set(hashes)) == 12
    metrics = ("recall@5", "recall@10", "mrr@10", "ndcg@10")
    for mode in ("bm25", "hybrid"):
        assert {k: resumed["modes"][mode][k] for k in metrics} == \
            {k: first["modes"][mode][k] for k in metrics}
    again = sift_eval(dataset, sift_env / "c", "--modes", "bm25")
    assert again["index"]["reused"]  # the completed build wrote its marker
