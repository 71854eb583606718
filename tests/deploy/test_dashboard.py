"""The Grafana dashboard in deploy/grafana queries only metrics Sift exposes, by their
exposed names and labels (a renamed metric or label would leave a panel empty)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bot.metrics.registry import Metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "sift-dashboard.json"


def exposed() -> dict[str, set[str]]:
    """Every sample name a scrape can carry, with its labels (each metric observed once)."""
    m = Metrics()
    m.answers.labels("slack", "accurate", "answered").inc()
    m.stage_seconds.labels("total").observe(1.0)
    m.in_flight.inc()
    m.grade_cache.labels("hit").inc()
    m.votes.labels("up").inc()
    m.llm_calls.labels("anthropic", "claude", "grade").inc()
    m.llm_tokens.labels("anthropic", "claude", "input").inc()
    m.llm_cost.labels("anthropic", "claude").inc()
    m.llm_errors.labels("anthropic", "claude", "timeout").inc()
    m.sync_runs.labels("kb", "full", "ok").inc()
    m.sync_documents.labels("kb", "added").inc()
    m.sync_last_success.labels("kb").set(1)
    m.push_hooks.labels("kb", "accepted").inc()
    m.up.labels("weaviate").set(1)
    found: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(m.exposition().decode()):
        for sample in family.samples:
            found.setdefault(sample.name, set()).update(sample.labels)
    return found


def test_every_panel_queries_exposed_metrics_and_labels() -> None:
    names = exposed()
    panels = json.loads(DASHBOARD.read_text())["panels"]
    assert len(panels) >= 12
    used = set()
    for panel in panels:
        for target in panel["targets"]:
            expr = target["expr"]
            for metric in set(re.findall(r"\bsift_[a-z_]+\b", expr)):
                assert metric in names, f"{panel['title']}: {metric} is not exposed"
                used.add(metric)
            for labels in re.findall(r"\{([^}]*)\}", expr):
                for label in re.findall(r"(\w+)\s*(?:=~|!=|=)", labels):
                    owner = re.findall(r"\b(sift_[a-z_]+)\{", expr)
                    assert any(label in names[o] for o in owner), (panel["title"], label)
            for grouped in re.findall(r"by \(([^)]*)\)", expr):
                for label in (g.strip() for g in grouped.split(",")):
                    assert label == "le" or any(label in labels for labels in names.values())
    # Each family of the list has a panel: answers, stages, LLM, cache, votes, sync,
    # push hooks, dependencies, questions in flight.
    for family in ("sift_answers_total", "sift_stage_seconds_bucket", "sift_llm_calls_total",
                   "sift_llm_errors_total", "sift_llm_tokens_total", "sift_llm_cost_usd_total",
                   "sift_grade_cache_total", "sift_votes_total", "sift_sync_runs_total",
                   "sift_sync_last_success_timestamp_seconds", "sift_push_hooks_total",
                   "sift_dependency_up", "sift_questions_in_flight"):
        assert family in used, family
