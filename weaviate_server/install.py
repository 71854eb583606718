"""Gets a Weaviate server binary: an explicit path or cache, the release tarball, a Go build."""

from __future__ import annotations

# The standard library only: `make install` runs this module with the system Python, so the
# build (minutes on a fresh machine) goes on while the packages install into the virtualenv.
import argparse
import json
import os
import platform
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.errors import ConfigError, SiftError
from weaviate_server.slim import KEPT_MODULES, REGISTRY, slim_registry

PINNED_VERSION = "1.39.3"  # the server Sift is tested with (SIFT_WEAVIATE__VERSION overrides)
BINARY_NAME = "weaviate-server"
GO_MODULE = "github.com/weaviate/weaviate"
GO_PACKAGE = f"{GO_MODULE}/cmd/weaviate-server"
# No debug information (panics still name functions and lines): a cold build takes ~15% less
# time (bench: 143 s -> 123 s on 2 cores) and the binary 140 MB, not 182.
GO_BUILD_FLAGS = ["-v", "-ldflags=-s -w", "-gcflags=all=-dwarf=false"]
RELEASE_URL = (
    "https://github.com/weaviate/weaviate/releases/download/v{version}/"
    "weaviate-v{version}-linux-{arch}.tar.gz"
)

Report = Callable[[str], None]


class WeaviateInstallError(SiftError):
    user_message = "No Weaviate server binary could be installed."


@dataclass(frozen=True)
class Attempt:
    method: str
    detail: str


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sift" / "weaviate"


def cached_binary(version: str) -> Path:
    return cache_root() / version / BINARY_NAME


def _usable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary(version: str, explicit: Path | None) -> Path | None:
    """The binary to run, without touching the network: SIFT_WEAVIATE_BINARY, else the cache."""
    if explicit is not None:
        if not _usable(explicit):
            raise ConfigError(
                f"SIFT_WEAVIATE_BINARY={explicit} is not an executable file.",
                user_message=f"SIFT_WEAVIATE_BINARY points at {explicit}, "
                "which is not an executable file.",
            )
        return explicit
    candidate = cached_binary(version)
    return candidate if _usable(candidate) else None


def _arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(
        machine, machine
    )


def _download_release(version: str, dest: Path, report: Report, release_url: str) -> None:
    url = release_url.format(version=version, arch=_arch())
    report(f"Downloading {url}")
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "weaviate.tar.gz"
        try:
            _fetch(url, archive, report)
        except (urllib.error.URLError, OSError) as exc:  # a refusal does not say where it went
            raise RuntimeError(f"{url}: {exc}") from exc
        with tarfile.open(archive) as tar:
            member = next((m for m in tar.getmembers() if Path(m.name).name == "weaviate"), None)
            if member is None:
                raise RuntimeError("the release archive holds no 'weaviate' binary")
            tar.extract(member, tmp, filter="data")
            shutil.move(str(Path(tmp) / member.name), dest)


def _fetch(url: str, archive: Path, report: Report) -> None:
    # urlopen follows redirects (GitHub sends release downloads to its storage host) and
    # raises HTTPError for an error status.
    with urllib.request.urlopen(url, timeout=20.0) as response:
        total = int(response.headers.get("content-length") or 0)
        done, last = 0, 0.0
        with archive.open("wb") as out:
            while block := response.read(1 << 20):
                out.write(block)
                done += len(block)
                if time.monotonic() - last > 2:
                    last = time.monotonic()
                    share = f" ({100 * done // total}%)" if total else ""
                    report(f"  {done >> 20} MiB{share}")


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("the 'go' command is not on PATH")
    return go


def _go_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "CGO_ENABLED": "1", "GOFLAGS": "-buildvcs=false", **extra}


def _run_go(command: list[str], env: dict[str, str], cwd: Path | None, report: Report) -> None:
    """Run a `go` build, reporting its progress every few seconds; raise with its last lines."""
    report("  " + " ".join(command[1:]))
    report("  (a cold build downloads a few hundred modules and compiles for a few minutes)")
    started = time.monotonic()
    tail: list[str] = []
    downloads = compiled = 0
    last = 0.0
    with subprocess.Popen(command, env=env, cwd=cwd, stderr=subprocess.PIPE,
                          stdout=subprocess.DEVNULL, text=True) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            line = line.rstrip()
            tail = [*tail[-19:], line]
            if line.startswith("go: downloading"):
                downloads += 1
            elif line and not line.startswith("go:"):
                compiled += 1
            if time.monotonic() - last > 5:
                last = time.monotonic()
                report(f"  {time.monotonic() - started:4.0f}s: {downloads} modules "
                       f"downloaded, {compiled} packages compiled")
        code = proc.wait()
    if code != 0:
        raise RuntimeError(f"go {command[1]} failed:\n    " + "\n    ".join(tail[-8:]))
    report(f"  built in {time.monotonic() - started:.0f}s")


def _writable_copy(source: Path, dest: Path) -> Path:
    """Copy a module from Go's read-only module cache, leaving out its acceptance tests."""
    shutil.copytree(source, dest, copy_function=shutil.copyfile,
                    ignore=lambda folder, _: ["test"] if Path(folder) == source else [])
    for folder, _, _ in os.walk(dest):
        os.chmod(folder, 0o755)
    return dest


def _slim_go_build(version: str, dest: Path, report: Report) -> None:
    go = _go()
    env = _go_env()
    report(f"Building Weaviate {version} from the Go module proxy, without the modules Sift "
           "never enables")
    fetched = subprocess.run([go, "mod", "download", "-json", f"{GO_MODULE}@v{version}"],
                             env=env, capture_output=True, text=True, check=False)
    try:
        module = json.loads(fetched.stdout)
    except ValueError:
        module = {}
    if fetched.returncode != 0 or "Dir" not in module:
        why = module.get("Error") or fetched.stderr.strip() or f"exit {fetched.returncode}"
        raise RuntimeError(f"go mod download failed: {why}")
    with tempfile.TemporaryDirectory() as work:
        tree = _writable_copy(Path(module["Dir"]), Path(work) / "weaviate")
        registry = tree / REGISTRY
        slimmed, dropped = slim_registry(registry.read_text(encoding="utf-8"), tree)
        registry.write_text(slimmed, encoding="utf-8")
        report(f"  {len(dropped)} modules left out (vectorizers, generative, rerankers, "
               f"cloud backups); kept: {', '.join(sorted(KEPT_MODULES))}")
        # -trimpath: the temporary directory stays out of the binary and of the build cache's
        # keys, so that building again reuses what the last build compiled.
        _run_go([go, "build", *GO_BUILD_FLAGS, "-trimpath", "-o", str(dest.absolute()),
                 "./cmd/weaviate-server"], env, tree, report)


def _full_go_build(version: str, dest: Path, report: Report) -> None:
    go = _go()
    with tempfile.TemporaryDirectory() as gobin:
        report(f"Building Weaviate {version} from the Go module proxy, every module included")
        _run_go([go, "install", *GO_BUILD_FLAGS, f"{GO_PACKAGE}@v{version}"],
                _go_env(GOBIN=gobin), None, report)
        shutil.move(str(Path(gobin) / BINARY_NAME), dest)


def install(version: str, explicit: Path | None, report: Report, *,
            release_url: str = RELEASE_URL) -> Path:
    """Return a runnable binary for `version`, installing it into the cache when needed.

    `release_url` is a template with {version} and {arch}, for a mirror of the releases.
    """
    found = find_binary(version, explicit)
    if found is not None:
        report(f"Weaviate {version}: using {found}")
        return found
    dest = cached_binary(version)
    dest.parent.mkdir(parents=True, exist_ok=True)
    attempts = [Attempt("SIFT_WEAVIATE_BINARY or cache", f"nothing at {dest}")]
    steps: list[tuple[str, Callable[[str, Path, Report], None]]] = [
        ("release tarball", lambda v, d, r: _download_release(v, d, r, release_url)),
        ("go build without modules", _slim_go_build),
        ("go build", _full_go_build),
    ]
    for method, step in steps:
        # Per process: two installs at once (two `sift` commands) each write their own file
        # and rename it into place; the last rename wins with a whole binary either way.
        partial = dest.with_name(f"{dest.name}.{os.getpid()}.{threading.get_ident()}.partial")
        try:
            step(version, partial, report)
            partial.chmod(partial.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            partial.replace(dest)
            report(f"Weaviate {version} installed at {dest}")
            return dest
        except Exception as exc:  # each way can fail in its own manner; all are reported
            partial.unlink(missing_ok=True)
            attempts.append(Attempt(method, f"{type(exc).__name__}: {exc}"))
            report(f"  {method} failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    lines = "; ".join(f"{a.method}: {a.detail}" for a in attempts)
    raise WeaviateInstallError(
        f"Could not install Weaviate {version}. Tried {lines}",
        user_message=f"Could not install Weaviate {version}. Tried: {lines}",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m weaviate_server.install",
        description="Put the Weaviate server binary in Sift's cache (~/.cache/sift/weaviate): "
        "the cached one, else the release tarball, else a build from the Go module proxy. "
        "Needs no package beyond the standard library; `sift weaviate install` does the same "
        "for the version your settings name.")
    parser.add_argument("--version", default=PINNED_VERSION,
                        help=f"the Weaviate version (default {PINNED_VERSION})")
    parser.add_argument("--release-url", default=RELEASE_URL,
                        help="where the release tarball is, with {version} and {arch} (a "
                        "mirror of GitHub's releases; default: GitHub)")
    args = parser.parse_args(argv)
    try:
        path = install(args.version, None, lambda line: print(line, flush=True),
                       release_url=args.release_url)
    except WeaviateInstallError as exc:
        print(exc.user_message, file=sys.stderr)
        return 1
    print(f"ready: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
