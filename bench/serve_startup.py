"""How soon `sift serve` is up: first /healthz answer, and /readyz 200 (model loaded).

Run:  .venv/bin/python -m bench.serve_startup [--runs 3]

Weaviate is started once beforehand (the issue's condition: installed and running), the
sample synced; then each run starts a fresh `sift serve` process and polls both endpoints
every 50 ms. Prints the median seconds from process start to each.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.cli_timing import ENTRY, ROOT, environment, sift
from weaviate_server.process import free_port


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def one_run(env: dict[str, str]) -> tuple[float, float]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", ENTRY, "serve"], cwd=ROOT,
                               env={**env, "SIFT_PORT": str(port),
                                    "SIFT_SYNC__SYNC_ON_START": "false"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    up = ready = 0.0
    try:
        while time.monotonic() - started < 180 and not ready:
            if not up and _status(base + "/healthz"):
                up = time.monotonic() - started
            if up and _status(base + "/readyz") == 200:
                ready = time.monotonic() - started
            time.sleep(0.05)
    finally:
        process.terminate()
        process.wait(60)
    return up, ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sift-serve-bench-") as scratch:
        env = environment(Path(scratch))
        sift(ROOT, env, "weaviate", "start")
        try:
            sift(ROOT, env, "sync")
            runs = [one_run(env) for _ in range(args.runs)]
        finally:
            sift(ROOT, env, "weaviate", "stop")
    ups, readies = [r[0] for r in runs], [r[1] for r in runs]
    print(f"sift serve, {args.runs} runs (median): first /healthz answer "
          f"{statistics.median(ups):.2f} s, /readyz 200 {statistics.median(readies):.2f} s")


if __name__ == "__main__":
    main()
