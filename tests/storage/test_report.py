"""`sift report` numbers on an empty database and on a sample whose numbers are derived by hand."""

from __future__ import annotations

from datetime import timedelta

import pytest

from storage.db import Database
from storage.report import DocumentFinding, ReportOptions, UnretrievedDocument, build_report
from storage.stats import FeedbackSummary, StatusCounts
from tests.storage.clock import Clock
from tests.storage.sample import record_sample


def test_report_on_an_empty_database(database: Database) -> None:
    report = build_report(database)
    assert report.statuses == StatusCounts(0, 0, 0, 0, 0)
    assert report.feedback == FeedbackSummary(0, 0, 0, 0)
    assert report.feedback.up_ratio is None
    assert (report.latencies, report.downvoted, report.gaps, report.modes, report.low_grade,
            report.never_retrieved, report.never_retrieved_total) == ((), (), (), (), (), (), 0)


@pytest.fixture
def report_clock(database: Database) -> Clock:
    clock = Clock()
    record_sample(database, clock)
    return clock


def test_window_sections(database: Database, report_clock: Clock) -> None:
    report = build_report(database, clock=report_clock)
    # The ten-day-old error is outside the default 7-day window.
    assert report.statuses == StatusCounts(total=6, answered=3, no_answer=2, degraded=1,
                                           error=0)
    # retrieve: 100 100 150 200 300 500 -> p50 at 2.5 = 175, p95 at 4.75 = 300 + .75*200
    # total: 400 600 1000 2000 3000 5000 -> p50 = 1500, p95 = 3000 + .75*2000 = 4500
    assert [(s.stage, s.count, s.p50_ms, s.p95_ms) for s in report.latencies] == [
        ("retrieve", 6, 175.0, 450.0), ("total", 6, 1500.0, 4500.0)]
    assert report.feedback == FeedbackSummary(up=3, down=3, voted_answers=4, answers=6)
    assert report.feedback.up_ratio == 0.5
    assert [(q.question, q.down, q.up, q.asked) for q in report.downvoted] == [
        ("VPN keeps disconnecting", 2, 0, 1), ("how do i reset mfa", 1, 2, 2)]
    assert [(g.question, g.asked) for g in report.gaps] == [("What is the parking policy", 2)]


def test_mode_comparison(database: Database, report_clock: Clock) -> None:
    modes = {m.mode: (m.count, m.up, m.down, m.thumbs_up_rate, m.no_answer_rate, m.p50_ms)
             for m in build_report(database, clock=report_clock).modes}
    # accurate: 1000 3000 2000 5000 (p50 2500), votes +2 -2 +1, one refusal of four.
    # fast: 400 600 (p50 500), one thumbs-down, one refusal of two.
    assert modes == {"accurate": (4, 3, 2, 0.6, 0.25, 2500.0),
                     "fast": (2, 0, 1, 0.0, 0.5, 500.0)}


def test_document_sections_are_all_time(database: Database, report_clock: Clock) -> None:
    report = build_report(database, clock=report_clock)
    # legacy-vpn: 0.2 0.3 0.1 0.4 -> 0.25. parking-old's model grades, 0.45 and the old 0.6,
    # average 0.525: the heuristic's 0.35 (fast mode) is no verdict and does not count.
    assert report.low_grade == (
        DocumentFinding("legacy-vpn", "Title of legacy-vpn", retrieved=4, graded=4, relevant=0,
                        average_grade=pytest.approx(0.25), cited=0, thumbs_down=0),
    )
    # The failed document is not a content finding; it is a sync problem.
    assert report.never_retrieved == (UnretrievedDocument("kb", "holidays"),
                                      UnretrievedDocument("kb", "onboarding"))
    assert report.never_retrieved_total == 2


def test_options_change_the_window_and_thresholds(database: Database,
                                                  report_clock: Clock) -> None:
    wide = build_report(database, ReportOptions(window=timedelta(days=30), min_retrieved=4,
                                                relevant_threshold=0.3, limit=1),
                        clock=report_clock)
    assert wide.statuses.total == 7 and wide.statuses.error == 1
    assert [d.doc_id for d in wide.low_grade] == ["legacy-vpn"]
    assert len(wide.never_retrieved) == 1 and wide.never_retrieved_total == 2


def test_tokens_by_provider_and_model(database: Database) -> None:
    """Each answer's stage tokens, summed per (provider, model), with the questions using it."""
    from dataclasses import replace

    from rag.types import Usage
    from storage.interactions import InteractionRepository
    from storage.report import ModelUsage
    from tests.storage.builders import answer

    repository = InteractionRepository(database)
    bedrock = {"grade": "us.anthropic.claude-haiku-v1:0", "generate": "us.anthropic.claude-x"}
    for _ in range(2):
        repository.record(replace(answer(), llm_provider="bedrock", models=bedrock, usage={
            "grade": Usage(1000, 50, 800, 0, 3), "generate": Usage(400, 200, 0, 100, 1)}))
    repository.record(replace(answer(), llm_provider="openai", models={"grade": "llama3.1:8b"},
                              usage={"grade": Usage(10, 5, 0, 0, 1)}))
    repository.record(replace(answer(), llm_provider="vertex", models={}, usage={}))  # fast
    assert build_report(database).models == (
        ModelUsage("bedrock", "us.anthropic.claude-haiku-v1:0", 2, 2 * 1800, 2 * 50, 6),
        ModelUsage("bedrock", "us.anthropic.claude-x", 2, 2 * 500, 2 * 200, 2),
        ModelUsage("openai", "llama3.1:8b", 1, 10, 5, 1))
    from rich.console import Console

    from bot.cli.report import render, to_json

    prices = {"claude-haiku": (1.0, 5.0)}
    report = build_report(database)
    console = Console(record=True, width=200, markup=False)
    render(report, "7 days", console, prices)
    shown = console.export_text()
    assert "Tokens and estimated cost by provider and model" in shown
    # 3,600 in and 100 out at $1 and $5 per million: $0.0041 in all, over two questions.
    assert "us.anthropic.claude-haiku-v1:0" in shown and "$0.0041" in shown
    assert "$0.00205" in shown
    [local] = [line.split() for line in shown.splitlines() if "llama3.1:8b" in line]
    assert local[-4:] == ["no", "price", "set", "-"]
    rows = to_json(report, prices)["models"]
    assert rows[0]["cost_usd"] == pytest.approx(0.0041)  # type: ignore[index]
