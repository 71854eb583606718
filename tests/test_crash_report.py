"""A parallel worker that dies: the failure names the signal and where each thread was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

DOOMED = '''
import ctypes
import os
import signal


def test_survives():
    assert True


def test_reads_address_zero():
    ctypes.string_at(0)  # SIGSEGV: faulthandler dumps the stacks, then the worker dies


def test_is_killed():
    os.kill(os.getpid(), signal.SIGKILL)  # nothing can catch this one
'''


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """What a one-worker run of the doomed module printed (xdist replaces a dead worker)."""
    where = tmp_path_factory.mktemp("doomed")
    (where / "test_doomed.py").write_text(DOOMED)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SIFT_TEST_CRASH_DIR", None)  # the inner run makes its own, as `make test` does
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "1", "-p", "tests.crash_report", "-p",
         "no:cacheprovider", "test_doomed.py"],
        cwd=where, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 1 passed" in done.stdout  # the test before the crashes still counts
    return done.stdout.splitlines()


def headline(report: list[str], test: str) -> str:
    [line] = [line for line in report
              if line.startswith("worker ") and f"test_doomed.py::{test}'" in line]
    return line


def test_a_segfault_names_the_signal_and_the_test_function(report: list[str]) -> None:
    line = headline(report, "test_reads_address_zero")
    assert "': the worker was killed by SIGSEGV, in File " in line
    assert line.endswith('test_doomed.py", line 12 in test_reads_address_zero')
    text = "\n".join(report)
    assert "Current thread 0x" in text and "/ctypes/" in text  # the whole stack follows
    assert "/_pytest/" not in text  # without the test runner's own frames


def test_a_kill_names_the_signal_and_says_there_is_no_dump(report: list[str]) -> None:
    line = headline(report, "test_is_killed")
    assert line.endswith("': the worker was killed by SIGKILL; no stack dump (a signal Python "
                         "cannot catch, e.g. SIGKILL from the kernel's OOM killer, leaves none)")
