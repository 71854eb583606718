"""A parallel worker that dies: the failure names the signal and where each thread was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def run_doomed(tmp_path: Path, test: str) -> str:
    (tmp_path / "test_doomed.py").write_text(DOOMED)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SIFT_TEST_CRASH_DIR", None)  # the inner run makes its own, as `make test` does
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "1", "-p", "tests.crash_report", "-p",
         "no:cacheprovider", "test_doomed.py::test_survives", f"test_doomed.py::{test}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    return done.stdout


def test_a_segfault_names_the_signal_and_the_test_function(tmp_path: Path) -> None:
    out = run_doomed(tmp_path, "test_reads_address_zero")
    headline = next(line for line in out.splitlines() if line.startswith("worker 'gw0'"))
    assert headline.startswith("worker 'gw0' crashed while running "
                               "'test_doomed.py::test_reads_address_zero': the worker was "
                               "killed by SIGSEGV, in File ")
    assert headline.endswith('test_doomed.py", line 12 in test_reads_address_zero')
    assert "Current thread 0x" in out and "/ctypes/" in out  # the whole stack follows
    assert "/_pytest/" not in out  # without the test runner's own frames
    assert "1 passed" in out  # the test before it still counts


def test_a_kill_names_the_signal_and_says_there_is_no_dump(tmp_path: Path) -> None:
    out = run_doomed(tmp_path, "test_is_killed")
    assert "was killed by SIGKILL" in out
    assert "no stack dump" in out
