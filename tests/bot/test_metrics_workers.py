"""Metrics with SIFT_WORKERS > 1: every process writes its values to the shared directory,
and a scrape of any one of them is the sum of all (prometheus-client's multi-process mode)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bot.metrics.registry import MULTIPROC_ENV, Metrics, reset_directory

WORKER = """
import sys
from pathlib import Path
from bot.metrics.registry import Metrics
m = Metrics(Path(sys.argv[1]))
m.answers.labels("slack", "accurate", "answered").inc(2)
m.in_flight.inc()
print("counted", flush=True)
sys.stdin.read()  # stays alive (its in-flight question) until told to go
"""


def answered(text: str) -> tuple[float, float]:
    found = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for f in text_string_to_metric_families(text) for s in f.samples}
    answers = found.get(("sift_answers_total", (("mode", "accurate"), ("outcome", "answered"),
                                                ("platform", "slack"))), 0.0)
    return answers, found.get(("sift_questions_in_flight", ()), 0.0)


def test_a_scrape_sums_every_worker(tmp_path: Path) -> None:
    directory = reset_directory(tmp_path / "metrics")
    (directory / "stale.db").write_bytes(b"")
    assert list(reset_directory(directory).iterdir()) == []  # an earlier run's files go
    primary = Metrics(directory)
    try:
        worker = subprocess.Popen([sys.executable, "-c", WORKER, str(directory)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, MULTIPROC_ENV: str(directory)})
        assert worker.stdout is not None and worker.stdout.readline().strip() == "counted"
        primary.answers.labels("slack", "accurate", "answered").inc()
        assert answered(primary.exposition().decode()) == (3.0, 1.0)
        worker.communicate("")
        primary.process_exited(worker.pid)
        # The dead worker's answers still count; its question is no longer in flight.
        assert answered(primary.exposition().decode()) == (3.0, 0.0)
    finally:
        primary.close()
    assert MULTIPROC_ENV not in os.environ
    alone = Metrics()  # one process again: values in memory, its own only
    alone.answers.labels("slack", "accurate", "answered").inc()
    assert answered(alone.exposition().decode()) == (1.0, 0.0)
