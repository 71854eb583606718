"""Every metric Sift exposes, on one registry per process (or shared files for workers)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    values,
)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Seconds: an understand call is ~0.3 s, a whole accurate answer several seconds.
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0)
STAGES = ("understand", "retrieve", "grade", "select", "generate", "total")


class Metrics:
    """The metrics of one `sift serve` process. With `directory` (SIFT_WORKERS > 1) every
    process writes its values to files there, and any of them serves the sum of all."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        if directory is not None:
            _share_values(directory)
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.answers = Counter("sift_answers", "Answers given, by platform, mode and outcome",
                               ["platform", "mode", "outcome"], registry=r)
        self.stage_seconds = Histogram("sift_stage_seconds", "Time a question spent in each "
                                       "pipeline stage (total: the whole answer)", ["stage"],
                                       buckets=STAGE_BUCKETS, registry=r)
        self.in_flight = Gauge("sift_questions_in_flight", "Questions being answered now",
                               registry=r, multiprocess_mode="livesum")
        self.grade_cache = Counter("sift_grade_cache", "Candidate grades from the cache (hit) "
                                   "or a fresh model call (miss)", ["result"], registry=r)
        self.votes = Counter("sift_votes", "Votes on answers", ["vote"], registry=r)
        self._llm(r)
        self._sync(r)
        self.push_hooks = Counter("sift_push_hooks", "Push notifications at /sync/hooks, by "
                                  "source and outcome", ["source", "outcome"], registry=r)
        self.up = Gauge("sift_dependency_up", "1 when the dependency answered its health "
                        "check at the last scrape", ["dependency"], registry=r,
                        multiprocess_mode="mostrecent")

    def _llm(self, r: CollectorRegistry) -> None:
        labels = ["provider", "model"]
        self.llm_calls = Counter("sift_llm_calls", "LLM calls, by purpose",
                                 [*labels, "purpose"], registry=r)
        self.llm_tokens = Counter("sift_llm_tokens", "LLM tokens, by kind (input, output, "
                                  "cache_read, cache_write)", [*labels, "kind"], registry=r)
        self.llm_cost = Counter("sift_llm_cost_usd", "Estimated LLM cost in US dollars "
                                "(SIFT_ADMIN__PRICES)", labels, registry=r)
        self.llm_errors = Counter("sift_llm_errors", "Failed LLM calls, by kind of failure",
                                  [*labels, "kind"], registry=r)

    def _sync(self, r: CollectorRegistry) -> None:
        self.sync_runs = Counter("sift_sync_runs", "Sync runs, by source, kind and outcome",
                                 ["source", "kind", "outcome"], registry=r)
        self.sync_documents = Counter("sift_sync_documents", "Documents synced, by source "
                                      "and change", ["source", "change"], registry=r)
        self.sync_last_success = Gauge("sift_sync_last_success_timestamp_seconds",
                                       "When a sync of the source last succeeded (Unix time)",
                                       ["source"], registry=r, multiprocess_mode="max")

    def exposition(self) -> bytes:
        """The Prometheus text format: this process's values, or every worker's summed."""
        if self.directory is None:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged, path=str(self.directory))
        return generate_latest(merged)

    def process_exited(self, pid: int) -> None:
        """Forget a dead worker's live gauges (its in-flight count); counters stay."""
        if self.directory is not None:
            multiprocess.mark_process_dead(pid, str(self.directory))

    def close(self) -> None:
        """Back to values in memory: a host process (the tests) may serve again."""
        if self.directory is not None:
            values.ValueClass = values.MutexValue
            os.environ.pop(MULTIPROC_ENV, None)


def reset_directory(directory: Path) -> Path:
    """An empty directory for a new run's files (the primary's job, before workers start):
    files left by an earlier run would be added to this one's counts."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


def _share_values(directory: Path) -> None:
    # prometheus-client picks its value store when it is imported, from this variable; the
    # workers this process starts inherit it, and this process switches now.
    os.environ[MULTIPROC_ENV] = str(directory)
    values.ValueClass = values.MultiProcessValue()
