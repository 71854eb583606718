"""The load benchmarks say why `sift serve` stopped before it was ready, from its own log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.serve_load import wait_ready


def test_a_server_that_exits_early_is_quoted(tmp_path: Path) -> None:
    errors = tmp_path / "stderr.log"
    with errors.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", "import sys; print('starting'); print('sift: Unknown "
             "setting SIFT_TYPO in the environment', file=sys.stderr); sys.exit(2)"],
            stdout=subprocess.DEVNULL, stderr=stderr)
    process.wait(30)
    # Port 9 (discard) on loopback: nothing answers /readyz, as before a real start.
    with pytest.raises(SystemExit) as stopped:
        wait_ready("http://127.0.0.1:9", process, 1, errors, timeout_s=30)
    said = str(stopped.value)
    assert said.startswith("sift serve exited with 2")
    assert "Unknown setting SIFT_TYPO" in said
    assert "starting" not in said  # stdout is not the log
