"""Runs a benchmark's measuring half in a fresh process on another checkout's code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def measure_in(tree: Path, script: str, *args: str) -> Any:
    """`script` (this checkout's benchmark file) run with `tree` first on the path, so a
    checkout older than the benchmark is measured too; what it printed last, as JSON."""
    # Its standard error (progress, or the error) goes straight to ours.
    done = subprocess.run([sys.executable, str(Path(script).resolve()), *args], cwd=tree,
                          stdout=subprocess.PIPE, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(tree)})
    if done.returncode:
        raise SystemExit(f"measuring {tree} failed (its error is above)")
    return json.loads(done.stdout.strip().splitlines()[-1])
