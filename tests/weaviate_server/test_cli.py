"""`sift weaviate start|status|stop` as real subprocesses, install()'s fallbacks, pid safety."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from rag.errors import ConfigError
from rag.index import IndexConfig, WeaviateIndex
from rag.types import Chunk
from tests.conftest import WEAVIATE_VERSION
from tests.fakes.http import LocalServer
from tests.fakes.weaviate_source import REGISTRY_SOURCE, module_tree
from weaviate_server.install import WeaviateInstallError, cached_binary, find_binary, install
from weaviate_server.process import ManagedWeaviate, Ports, free_port, free_ports
from weaviate_server.slim import REGISTRY

SIFT = Path(sys.executable).parent / "sift"
PORT_NAMES = ("http", "grpc", "gossip", "data", "raft", "raft_rpc", "profiling")


def weaviate_binary() -> Path:
    """The binary the session fixture runs (tests/conftest.py); missing fails, never skips."""
    explicit = os.environ.get("SIFT_WEAVIATE_BINARY")
    binary = find_binary(WEAVIATE_VERSION, Path(explicit) if explicit else None)
    if binary is None:
        pytest.fail(f"No Weaviate {WEAVIATE_VERSION} binary at {cached_binary(WEAVIATE_VERSION)}"
                    ": run `sift weaviate install`.", pytrace=False)
    return binary


def sift(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SIFT), "weaviate", *args], env=env, capture_output=True,
                          text=True, timeout=180, check=False)


@pytest.fixture
def cli_env(tmp_path: Path) -> Iterator[tuple[dict[str, str], Ports]]:
    """Environment for a `sift` run with its own data dir and free ports; stops what it started."""
    ports = free_ports()
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("SIFT_")}
    env.update(SIFT_DATA_DIR=str(tmp_path / "data"),
               SIFT_WEAVIATE_BINARY=str(weaviate_binary()))
    for name, port in zip(PORT_NAMES, ports.all(), strict=True):
        env[f"SIFT_WEAVIATE__{name.upper()}_PORT"] = str(port)
    yield env, ports
    # In-process, because every `sift` run pays for importing the whole app.
    ManagedWeaviate(None, tmp_path / "data" / "weaviate", ports).stop()


def text_status(output: str) -> dict[str, str]:
    pairs = (line.split(None, 1) for line in output.splitlines() if line.strip())
    return {key: value.strip() for key, value in pairs}


def pid_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # exited, waiting for its parent (init) to reap it


async def add_objects(data_dir: Path, ports: Ports, count: int) -> None:
    config = IndexConfig(http_url=f"http://127.0.0.1:{ports.http}",
                         grpc_url=f"127.0.0.1:{ports.grpc}",
                         api_key=(data_dir / "weaviate" / "api-key").read_text().strip())
    index = WeaviateIndex(config, "local:all-MiniLM-L6-v2", 384)
    await index.connect()
    try:
        chunks = [Chunk(chunk_id=f"kb:d{i}:0", doc_id=f"d{i}", source="kb", title="T",
                        text=f"text {i}") for i in range(count)]
        await index.upsert(chunks, [[0.1 * (i + 1)] * 384 for i in range(count)])
    finally:
        await index.close()


@pytest.mark.weaviate
@pytest.mark.slow
@pytest.mark.weaviate
def test_start_status_stop(cli_env: tuple[dict[str, str], Ports]) -> None:
    env, ports = cli_env
    data_dir = Path(env["SIFT_DATA_DIR"])
    started = sift(env, "start")
    assert started.returncode == 0, started.stderr
    pid = int((data_dir / "weaviate" / "weaviate.pid").read_text())
    assert f"pid {pid}, http {ports.http}, grpc {ports.grpc}" in started.stdout
    asyncio.run(add_objects(data_dir, ports, 3))

    status = sift(env, "status")
    assert status.returncode == 0, status.stderr
    shown = text_status(status.stdout)
    assert shown["version"] == WEAVIATE_VERSION
    assert (shown["http_port"], shown["grpc_port"]) == (str(ports.http), str(ports.grpc))
    assert (shown["objects"], shown["running"], shown["pid"]) == ("3", "True", str(pid))

    stopped = sift(env, "stop")
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "Weaviate stopped.")
    assert pid_gone(pid)
    assert not (data_dir / "weaviate" / "weaviate.pid").exists()
    after = sift(env, "status")
    assert after.returncode == 3 and "not running" in after.stdout


# install(): explicit path or cache, then the release tarball, then a Go build.

VERSION = "9.9.9-test"


def fake_go(directory: Path, body: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    go = directory / "go"
    go.write_text("#!/bin/sh\n" + body)
    go.chmod(0o755)


def fake_go_builds(directory: Path, module: Path, *, install: str = "exit 1\n") -> Path:
    """A `go` whose module download gives `module` (read-only, as Go's module cache is), whose
    `go build` keeps a copy of the registry it compiled and writes a binary printing "slim",
    and whose `go install` (the full build) runs `install`. Each call's arguments go to
    `directory / "calls"`, a line each. Returns where the copy of the registry goes."""
    seen = directory / "registry-built.go"
    for path in sorted(module.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    module.chmod(0o555)
    fake_go(directory, f"""printf '%s\\n' "$*" >> "{directory / 'calls'}"
case "$1" in
mod) printf '{{"Path":"github.com/weaviate/weaviate","Dir":"%s"}}\\n' "{module}" ;;
build) for a; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
       cp {REGISTRY} "{seen}"
       printf '#!/bin/sh\\necho slim cgo=%s\\n' "$CGO_ENABLED" > "$out" ;;
install) {install} ;;
esac
""")
    return seen


@pytest.fixture
def go_module(tmp_path: Path) -> Path:
    """Weaviate's source as `go mod download` leaves it (tests/fakes/weaviate_source.py)."""
    return module_tree(tmp_path / "gomodcache" / f"weaviate@v{VERSION}")


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private cache dir, a release URL nobody listens on, and a `go` that we control."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return f"http://127.0.0.1:{free_port()}/weaviate-v{{version}}.tar.gz"


def test_install_names_every_step_and_why(tmp_path: Path, offline: str) -> None:
    fake_go(tmp_path / "bin", 'echo "fake go: $*" >&2\nexit 1\n')
    lines: list[str] = []
    with pytest.raises(WeaviateInstallError) as caught:
        install(VERSION, None, lines.append, release_url=offline)
    message = caught.value.user_message
    url = offline.format(version=VERSION)
    why = [f"SIFT_WEAVIATE_BINARY or cache: nothing at {cached_binary(VERSION)}",
           f"release tarball: RuntimeError: {url}: ",
           "go build without modules: RuntimeError: go mod download failed: fake go: mod "
           f"download -json github.com/weaviate/weaviate@v{VERSION}",
           "go build: RuntimeError: go install failed",
           "fake go: install -v -ldflags=-s -w -gcflags=all=-dwarf=false "
           f"github.com/weaviate/weaviate/cmd/weaviate-server@v{VERSION}"]
    positions = [message.find(part) for part in why]
    assert -1 not in positions and positions == sorted(positions), message
    steps = [i for i, line in enumerate(lines) if line.startswith(("Downloading", "Building"))]
    assert [lines[i].split()[0] for i in steps] == ["Downloading", "Building", "Building"]
    assert not list(cached_binary(VERSION).parent.iterdir())  # no partial file left behind


class SlowRelease(LocalServer):
    """A release server whose tarball arrives slowly, so that two downloads overlap."""

    def __init__(self, binary: bytes) -> None:
        super().__init__()
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            info = tarfile.TarInfo("weaviate")
            info.size, info.mode = len(binary), 0o755
            tar.addfile(info, io.BytesIO(binary))
        self.tarball = buffer.getvalue()
        self.requests = 0
        self.app.router.add_get("/weaviate-v{version}.tar.gz", self._get)

    async def _get(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        response = web.StreamResponse(headers={"Content-Length": str(len(self.tarball))})
        await response.prepare(request)
        half = len(self.tarball) // 2
        await response.write(self.tarball[:half])
        await asyncio.sleep(0.5)  # the other install is downloading meanwhile
        await response.write(self.tarball[half:])
        await response.write_eof()
        return response


async def test_two_installs_at_once_both_get_a_whole_binary(tmp_path: Path,
                                                           offline: str) -> None:
    fake_go(tmp_path / "bin", "exit 1\n")  # no fallback: the download itself must succeed
    binary = b"#!/bin/sh\necho weaviate\n" + b"#" * 200_000
    async with SlowRelease(binary) as release:
        assert isinstance(release, SlowRelease)
        url = release.url + "/weaviate-v{version}.tar.gz"
        found = await asyncio.gather(*(asyncio.to_thread(install, VERSION, None, lambda _: None,
                                                         release_url=url) for _ in range(2)))
    assert release.requests == 2
    assert found == [cached_binary(VERSION)] * 2
    assert cached_binary(VERSION).read_bytes() == binary
    assert os.access(cached_binary(VERSION), os.X_OK)
    assert not list(cached_binary(VERSION).parent.glob("*.partial"))


def test_go_build_follows_an_unreachable_release(tmp_path: Path, offline: str,
                                                 go_module: Path) -> None:
    built = fake_go_builds(tmp_path / "bin", go_module)
    lines: list[str] = []
    path = install(VERSION, None, lines.append, release_url=offline)
    assert path == cached_binary(VERSION)
    assert subprocess.run([path], capture_output=True, text=True).stdout == "slim cgo=1\n"
    assert any(line.startswith("  release tarball failed") for line in lines)
    assert lines[-1] == f"Weaviate {VERSION} installed at {path}"
    # What was compiled: the module's source with the registry rewritten, not the original.
    assert "modules/text2vec-openai" not in built.read_text()
    assert "modules/text2vec-openai" in (go_module / REGISTRY).read_text()
    assert "  2 modules left out (vectorizers, generative, rerankers, cloud backups); kept: " \
           "backup-filesystem" in lines


def test_a_registry_the_rewrite_does_not_know_gets_the_full_build(tmp_path: Path,
                                                                   offline: str) -> None:
    source = REGISTRY_SOURCE.replace("\treturn nil\n}", "\tmodopenai.Configure()\n\treturn nil\n}")
    module = module_tree(tmp_path / "gomodcache" / f"weaviate@v{VERSION}", source)
    built = fake_go_builds(tmp_path / "bin", module, install='printf "#!/bin/sh\\necho full\\n" '
                                                            '> "$GOBIN/weaviate-server"')
    lines: list[str] = []
    path = install(VERSION, None, lines.append, release_url=offline)
    assert subprocess.run([path], capture_output=True, text=True).stdout == "full\n"
    assert not built.exists()
    assert any(line.startswith("  go build without modules failed: SlimmingError: ")
               and "modopenai.Configure" in line for line in lines)


def test_the_go_builds_leave_out_debug_information(tmp_path: Path, offline: str,
                                                   go_module: Path) -> None:
    """A cold build compiles ~300 modules on the critical path of a fresh `make install`;
    DWARF is a debugger's aid only, and costs ~15% of that time."""
    fake_go_builds(tmp_path / "bin", go_module)
    install(VERSION, None, lambda _: None, release_url=offline)
    slim = (tmp_path / "bin" / "calls").read_text().splitlines()
    assert slim[0] == f"mod download -json github.com/weaviate/weaviate@v{VERSION}"
    assert slim[1].startswith("build ") and slim[1].endswith(" ./cmd/weaviate-server")
    assert "-ldflags=-s -w" in slim[1] and "-gcflags=all=-dwarf=false" in slim[1]

    args = tmp_path / "args"
    fake_go(tmp_path / "bin", 'case "$1" in mod) exit 1 ;; esac\n'
                              f'for a in "$@"; do echo "$a"; done > {args}\n'
                              'printf "#!/bin/sh\\n" > "$GOBIN/weaviate-server"\n')
    cached_binary(VERSION).unlink()
    install(VERSION, None, lambda _: None, release_url=offline)
    full = args.read_text().splitlines()
    assert full[0] == "install"
    assert "-ldflags=-s -w" in full and "-gcflags=all=-dwarf=false" in full
    assert full[-1] == f"github.com/weaviate/weaviate/cmd/weaviate-server@v{VERSION}"


def run_installer(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -S -m weaviate_server.install`: -S leaves site-packages out, as on a machine whose
    virtualenv does not exist yet (`make install` builds Weaviate while uv installs)."""
    return subprocess.run([sys.executable, "-S", "-m", "weaviate_server.install", *args],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=60)


def test_the_installer_runs_without_any_package(tmp_path: Path, offline: str,
                                                go_module: Path) -> None:
    fake_go_builds(tmp_path / "bin", go_module)
    done = run_installer("--version", VERSION, "--release-url", offline)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"ready: {cached_binary(VERSION)}"
    assert subprocess.run([cached_binary(VERSION)], capture_output=True,
                          text=True).stdout == "slim cgo=1\n"


def test_the_installer_says_in_one_sentence_why_it_failed(tmp_path: Path,
                                                          offline: str) -> None:
    fake_go(tmp_path / "bin", "exit 1\n")
    done = run_installer("--version", VERSION, "--release-url", offline)
    assert done.returncode == 1
    assert done.stderr.startswith(f"Could not install Weaviate {VERSION}. Tried: ")
    assert "go install failed" in done.stderr and "Traceback" not in done.stderr
    assert not cached_binary(VERSION).exists()


def test_cached_binary_needs_no_network(tmp_path: Path, offline: str) -> None:
    fake_go(tmp_path / "bin", "exit 1\n")
    cached = cached_binary(VERSION)
    cached.parent.mkdir(parents=True)
    shutil.copy("/bin/true", cached)
    lines: list[str] = []
    assert install(VERSION, None, lines.append, release_url=offline) == cached
    assert lines == [f"Weaviate {VERSION}: using {cached}"]


def test_explicit_binary_must_be_executable(tmp_path: Path, offline: str) -> None:
    plain = tmp_path / "weaviate-server"
    plain.write_text("not a program")
    with pytest.raises(ConfigError, match="not an executable file"):
        install(VERSION, plain, print, release_url=offline)


# stop(): a pid file may outlive its server, and the pid may now belong to someone else.

@pytest.mark.parametrize(("program", "known_binary", "killed"), [
    ("sleep", False, False),  # an unrelated process that reused the pid
    ("weaviate-server", False, True),
    ("my-server", True, True),  # SIFT_WEAVIATE_BINARY with a name of its own
    ("my-server", False, False),
])
def test_stop_signals_only_weaviate(tmp_path: Path, program: str, known_binary: bool,
                                    killed: bool) -> None:
    executable = tmp_path / program
    shutil.copy(shutil.which("sleep") or "/bin/sleep", executable)
    process = subprocess.Popen([str(executable), "60"])
    try:
        # Popen may return while the kernel is still inside exec: /proc then shows an empty
        # command line for a moment (seen once on a loaded machine), which is not the case
        # under test (a pid file that outlived its server).
        cmdline = Path(f"/proc/{process.pid}/cmdline")
        deadline = time.monotonic() + 10
        while not cmdline.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        managed = ManagedWeaviate(executable if known_binary else None, tmp_path / "data",
                                  free_ports())
        managed.data_dir.mkdir()
        managed.pid_file.write_text(str(process.pid))
        assert managed.stop(timeout_s=5) is killed
        if killed:
            assert process.wait(timeout=5) == -signal.SIGTERM
        else:
            assert process.poll() is None  # still sleeping
        assert not managed.pid_file.exists()
    finally:
        process.kill()
        process.wait()
