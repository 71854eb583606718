"""A fresh machine's `.ci/run` (make install, make test) with every cache empty, and its size.

Run:  .venv/bin/python -m bench.fresh_machine [--rev HEAD] [--remove-system-packages] [--image]

Clones this repository at --rev into a scratch directory and runs its `.ci/run` there with
uv's, pip's and Go's caches (modules and build) and the model and Weaviate caches
(`XDG_CACHE_HOME`) all empty and inside the scratch directory, so nothing of this machine's
earlier installs helps. It reports the seconds of the install and of the test suite (as
`.ci/run` prints them), the Weaviate build's own time, the tests that passed, and the size of
the fresh `.venv` with its largest packages (and whether torch or NVIDIA libraries came in).

--remove-system-packages (root, Debian) first removes PostgreSQL, chromium and
chromium-driver and empties apt's download cache, so that `make install` installs them as on a
fresh machine; they are installed again by that run. Without it, those packages are reported
as already present and the install is that much shorter.

--image also installs what the Dockerfile's runtime stage copies (a virtualenv with only the
`local` extra, and the embedding model's cache) and reports their size: the image is that much
larger than its base (python:3.11-slim). No Docker engine is needed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PACKAGES = ("chromium", "chromium-driver", "postgresql")
HEAVY = re.compile(r"^(torch|nvidia|triton)", re.IGNORECASE)
PROGRESS = re.compile(r"built in \d+s|\d+ (passed|failed)")
PHASE = re.compile(r"^== (.+) \((\d+)s\)$", re.MULTILINE)


def say(message: str) -> None:
    print(message, flush=True)


def megabytes(path: Path) -> float:
    """Disk usage as `du` counts it (allocated blocks, hard links once)."""
    done = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[0]) / 1024


def fresh_environment(scratch: Path) -> dict[str, str]:
    """This process's environment with every cache moved into `scratch` and no Sift settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIFT_")}
    for name, folder in (("UV_CACHE_DIR", "uv"), ("PIP_CACHE_DIR", "pip"),
                         ("GOMODCACHE", "go-modules"), ("GOCACHE", "go-build"),
                         ("XDG_CACHE_HOME", "xdg-cache")):
        env[name] = str(scratch / folder)
    env.pop("VIRTUAL_ENV", None)
    return env


def installed_postgresql() -> list[str]:
    """The Debian packages of the PostgreSQL server (postgresql, postgresql-15, ...)."""
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\n"],
                          capture_output=True, text=True, check=False)
    return [line.split()[0] for line in done.stdout.splitlines()
            if re.match(r"postgresql(-\d+)? .*installed$", line)]


def remove_system_packages() -> None:
    if os.geteuid() != 0:
        raise SystemExit("--remove-system-packages needs root (apt-get remove).")
    packages = [*SYSTEM_PACKAGES[:2], *installed_postgresql()]
    say(f"removing {' '.join(packages)} and emptying apt's download cache")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "remove", "-y", "-qq", *packages], env=env, check=False,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "clean"], check=True)


def present_system_packages() -> list[str]:
    found = []
    if shutil.which("chromium"):
        found.append("chromium")
    if shutil.which("chromedriver"):
        found.append("chromium-driver")
    if installed_postgresql():
        found.append("postgresql")
    return found


def run_ci(src: Path, env: dict[str, str], log: Path) -> tuple[int, float]:
    """Run `.ci/run` in `src`, its output to `log`, printing its phase lines as they come."""
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen([str(src / ".ci" / "run")], cwd=src, env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert process.stdout is not None
        for line in process.stdout:
            out.write(line)
            if line.startswith("== ") or PROGRESS.search(line):
                say("  " + line.strip())
        code = process.wait()
    return code, time.perf_counter() - started


def phases(log_text: str) -> dict[str, int]:
    """Seconds since `.ci/run` started at each of its phase lines (`== Test suite (203s)`)."""
    return {m.group(1): int(m.group(2)) for m in PHASE.finditer(log_text)}


def largest_packages(venv: Path, count: int) -> list[tuple[str, float]]:
    site = next(venv.glob("lib/python3*/site-packages"))
    sizes = [(entry.name, megabytes(entry)) for entry in site.iterdir()
             if entry.is_dir() and not entry.name.endswith((".dist-info", "__pycache__"))]
    return sorted(sizes, key=lambda item: -item[1])[:count]


def report_venv(venv: Path, label: str) -> None:
    top = largest_packages(venv, 8)
    heavy = [name for name, _ in largest_packages(venv, 10_000) if HEAVY.match(name)]
    say(f"{label}: {megabytes(venv):,.0f} MB; largest: "
        + ", ".join(f"{name} {size:,.0f}" for name, size in top))
    say(f"  torch or NVIDIA libraries: {', '.join(heavy) if heavy else 'none'}")


def image_contents(src: Path, env: dict[str, str], scratch: Path) -> None:
    """Install what the Dockerfile's runtime stage copies, and measure it."""
    venv = scratch / "image-venv"
    cache = scratch / "image-cache"
    uv = src / ".venv" / "bin" / "uv"
    image_env = {**env, "XDG_CACHE_HOME": str(cache)}
    python = shutil.which("python3.11") or shutil.which("python3") or sys.executable
    subprocess.run([str(uv), "venv", "--quiet", "--python", python, str(venv)],
                   cwd=src, env=image_env, check=True)
    subprocess.run([str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
                    "-e", ".[local]"], cwd=src, env=image_env, check=True)
    subprocess.run([str(venv / "bin" / "python"), "-c",
                    "from rag.embed import LocalEmbedder; LocalEmbedder().encode_now(['warm-up'])"],
                   cwd=src, env=image_env, check=True, capture_output=True)
    app = sum(megabytes(src / part) for part in ("bot", "rag", "sync", "storage", "examples"))
    report_venv(venv, "the image's virtualenv (the `local` extra, as the Dockerfile installs)")
    say(f"  the model cache {megabytes(cache):,.0f} MB, the application {app:,.0f} MB: the image "
        f"is about {megabytes(venv) + megabytes(cache) + app:,.0f} MB larger than python:3.11-slim")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--rev", default="HEAD", help="the commit to clone (default HEAD)")
    parser.add_argument("--remove-system-packages", action="store_true",
                        help="remove PostgreSQL, chromium and chromium-driver first (root)")
    parser.add_argument("--image", action="store_true",
                        help="also measure what the Docker image adds to its base")
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch directory (its path is printed)")
    args = parser.parse_args()

    known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{args.rev}^{{commit}}"],
                           cwd=ROOT, capture_output=True, check=False)
    if known.returncode != 0:
        raise SystemExit(f"--rev {args.rev}: no such commit in {ROOT}.")
    if args.remove_system_packages:
        remove_system_packages()
    already = present_system_packages()
    scratch = Path(tempfile.mkdtemp(prefix="sift-fresh-"))
    try:
        src = scratch / "src"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(src)], check=True)
        subprocess.run(["git", "checkout", "--quiet", args.rev], cwd=src, check=True)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=src, text=True,
                                capture_output=True, check=True).stdout.strip()
        say(f"fresh clone of {commit} in {scratch}; every cache empty; system packages "
            + (f"already installed: {', '.join(already)}" if already else "not installed"))
        env = fresh_environment(scratch)
        log = scratch / "ci.log"
        code, seconds = run_ci(src, env, log)
        text = log.read_text()
        if code != 0:
            say(text[-3000:])
            raise SystemExit(f".ci/run failed (exit {code}); its log is above.")
        marks = phases(text)
        suite_start = marks.get("Test suite", 0)
        built = re.search(r"built in (\d+)s", text)
        passed = re.findall(r"(\d+) passed", text)
        say(f".ci/run: {seconds:.0f} s = install {suite_start} s "
            f"(of which the Weaviate build {built.group(1) + ' s' if built else 'nothing: cached'})"
            f" + test suite {seconds - suite_start:.0f} s ({passed[-1] if passed else '?'} passed)")
        report_venv(src / ".venv", ".venv (every extra, as `make install` makes it)")
        if args.image:
            image_contents(src, env, scratch)
    finally:
        if args.keep:
            say(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
