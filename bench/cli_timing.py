"""Wall time of `sift --help` and `sift ask` as a person runs them, Weaviate already running.

Run:  .venv/bin/python -m bench.cli_timing [--runs 5] [--tree OTHER_CHECKOUT ...]

Starts one managed Weaviate on free ports in a scratch data directory, syncs the sample
knowledge base once, then times fresh `sift` processes (fast mode, no API key): the median
of --runs each. With --tree, the same commands also run against other checkouts (for
example main before a change), interleaved run by run, so a busy machine slows both alike
and the ratio stays meaningful. A checkout runs on its own `.venv` when it has one (so two
installs compare too), else on this interpreter.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from weaviate_server.process import free_ports

ROOT = Path(__file__).resolve().parent.parent
ENTRY = "import sys; from bot.cli import main; sys.exit(main(sys.argv[1:]))"
QUESTION = "how do I reset my MFA?"


def environment(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("SIFT_") and k != "ANTHROPIC_API_KEY"}
    env["SIFT_DATA_DIR"] = str(data_dir)
    env["SIFT_LOG_LEVEL"] = "WARNING"
    env |= {name: str(port) for name, port in free_ports().settings().items()}
    return env


def sift(tree: Path, env: dict[str, str], *args: str) -> float:
    """Seconds for one `sift` process started from `tree`; a failure stops the benchmark."""
    run_env = {**env, "PYTHONPATH": str(tree)}
    if tree != ROOT:  # its own database: another checkout may have other migrations
        data_dir = Path(env["SIFT_DATA_DIR"])
        run_env["SIFT_DATABASE_URL"] = f"sqlite:///{data_dir.parent / tree.name}.db"
    own = tree / ".venv" / "bin" / "python"
    python = str(own) if own.exists() else sys.executable
    started = time.perf_counter()
    done = subprocess.run([python, "-c", ENTRY, *args], cwd=tree, env=run_env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"sift {' '.join(args)} failed in {tree}:\n{done.stderr[-2000:]}")
    return elapsed


def measure(trees: list[Path], env: dict[str, str], runs: int) -> dict[tuple[str, str], float]:
    commands = {"sift --help": ("--help",), "sift ask": ("ask", QUESTION, "--mode", "fast")}
    times: dict[tuple[str, str], list[float]] = {}
    for tree in trees:  # one untimed run each: the ONNX export and .pyc files are made once
        sift(tree, env, *commands["sift ask"])
    for _ in range(runs):
        for tree in trees:
            for label, args in commands.items():
                times.setdefault((str(tree), label), []).append(sift(tree, env, *args))
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="another checkout to time side by side with this one")
    args = parser.parse_args()
    trees = [ROOT, *(t.resolve() for t in args.tree)]
    with tempfile.TemporaryDirectory(prefix="sift-cli-timing-") as scratch:
        env = environment(Path(scratch) / "data")
        sift(ROOT, env, "weaviate", "start")
        try:
            sift(ROOT, env, "sync")
            medians = measure(trees, env, args.runs)
        finally:
            sift(ROOT, env, "weaviate", "stop")
    print(f"median of {args.runs} runs, Weaviate already running, fast mode")
    for tree in trees:
        row = ", ".join(f"{label} {medians[(str(tree), label)]:.2f} s"
                        for label in ("sift --help", "sift ask"))
        print(f"{tree}: {row}")


if __name__ == "__main__":
    main()
