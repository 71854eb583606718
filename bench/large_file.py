"""Peak memory of `sift sync` on a folder holding one file over the size limit.

Run:  .venv/bin/python -m bench.large_file [--mb 100] [--runs 3] [--tree OTHER_CHECKOUT ...]

A scratch folder holds a few small Markdown pages; a second one the same pages and one
Markdown file of --mb megabytes (real text, over the default 50 MB SIFT_SYNC__MAX_FILE_MB).
Each is synced by a fresh `sift sync` process into its own collection of one managed
Weaviate, and the process's peak resident memory (ru_maxrss from wait4) is reported: the
median of --runs, without the large file, with it, and the difference, which is what the
refused file cost. With --tree, other checkouts (main before a change) run the same syncs
interleaved with this one's, each on its own database and its own `.venv` when it has one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from bench.cli_timing import ENTRY, ROOT, environment

PAGE = ("# {title}\n\nTo {verb} the staging database credentials, open the vault, run the "
        "documented command and record the change in the ticket.\n")


def write_knowledge(folder: Path, large_mb: int) -> None:
    folder.mkdir(parents=True)
    for n, verb in enumerate(("rotate", "renew", "revoke", "audit")):
        (folder / f"page-{n}.md").write_text(PAGE.format(title=f"Page {n}", verb=verb))
    if large_mb:
        line = "Every line of this export repeats the same words about nothing at all.\n"
        with (folder / "export.md").open("w") as handle:
            handle.write("# A huge export\n\n")
            for _ in range(large_mb * 2**20 // len(line) + 1):
                handle.write(line)


def peak_mb(tree: Path, env: dict[str, str], knowledge: Path) -> float:
    """One `sift sync` of `knowledge` from `tree`: its peak RSS in MB."""
    config = knowledge.parent / f"{knowledge.name}-{uuid.uuid4().hex[:6]}.toml"
    config.write_text(f'[[sources]]\nname = "kb"\nkind = "folder"\npath = "{knowledge}"\n')
    data_dir = Path(env["SIFT_DATA_DIR"])
    run_env = {**env, "PYTHONPATH": str(tree), "SIFT_WEAVIATE__COLLECTION":
               f"Large{uuid.uuid4().hex[:10]}",
               "SIFT_DATABASE_URL": f"sqlite:///{data_dir.parent / uuid.uuid4().hex}.db"}
    own = tree / ".venv" / "bin" / "python"
    python = str(own) if own.exists() else sys.executable
    process = subprocess.Popen([python, "-c", ENTRY, "--config", str(config), "sync"],
                               cwd=tree, env=run_env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    errors = process.stderr.read() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"sift sync failed in {tree}:\n{errors[-2000:]}")
    if (knowledge / "export.md").exists() and "export.md" not in errors:
        raise SystemExit(f"{tree}: the large file was not refused:\n{errors[-2000:]}")
    return usage.ru_maxrss / 1024  # Linux reports kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="size of the large file")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="another checkout to measure side by side with this one")
    args = parser.parse_args()
    trees = [ROOT, *(t.resolve() for t in args.tree)]
    peaks: dict[tuple[Path, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="sift-large-file-") as scratch:
        small, large = Path(scratch) / "small", Path(scratch) / "large"
        write_knowledge(small, 0)
        write_knowledge(large, args.mb)
        env = environment(Path(scratch) / "data")
        subprocess.run([sys.executable, "-c", ENTRY, "weaviate", "start"], cwd=ROOT,
                       env={**env, "PYTHONPATH": str(ROOT)}, check=True,
                       stdout=subprocess.DEVNULL)
        try:
            for _ in range(args.runs):
                for tree in trees:
                    for label, folder in (("without", small), ("with", large)):
                        peaks.setdefault((tree, label), []).append(peak_mb(tree, env, folder))
        finally:
            subprocess.run([sys.executable, "-c", ENTRY, "weaviate", "stop"], cwd=ROOT,
                           env={**env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL)
    print(f"peak RSS of `sift sync`, median of {args.runs} runs; the large file: {args.mb} MB")
    print(f"{'checkout':<40} {'without':>9} {'with':>9} {'its cost':>9}")
    for tree in trees:
        without = statistics.median(peaks[(tree, "without")])
        with_it = statistics.median(peaks[(tree, "with")])
        print(f"{tree!s:<40} {without:>6.0f} MB {with_it:>6.0f} MB "
              f"{with_it - without:>+6.0f} MB")


if __name__ == "__main__":
    main()
