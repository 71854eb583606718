"""A real PostgreSQL for the tests: SIFT_TEST_POSTGRES_URL, or a throwaway local cluster."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from weaviate_server.process import free_port

ENV_URL = "SIFT_TEST_POSTGRES_URL"
DATABASE = "sift_test"


def _bin_dir() -> Path | None:
    """The newest installed server's bin directory (Debian layout), if any."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found = [d for d in found if (d / "pg_ctl").exists()]
    return max(found, key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0,
               default=None)


class Cluster:
    """initdb + pg_ctl in a temp dir on a free loopback port; as root, run as `postgres`."""

    def __init__(self, bin_dir: Path, extra_options: str = "") -> None:
        self.bin_dir = bin_dir
        self.extra_options = extra_options
        self.root = Path(tempfile.mkdtemp(prefix="sift-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")

    def _run(self, *args: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_root else []
        done = subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            pytest.fail(f"`{' '.join(args)}` failed ({done.returncode}):\n{done.stderr}"
                        f"{self._log_tail()}", pytrace=False)

    def _log_tail(self) -> str:
        log = self.root / "server.log"
        return "\n" + log.read_text()[-2000:] if log.exists() else ""

    def start(self) -> str:
        self._run(str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
        self.resume()
        admin = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {DATABASE}")
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def resume(self) -> None:
        """Start the server on its data directory (again, after `pause`)."""
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                   f"-c max_connections=200 {self.extra_options}").strip()
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-o", options,
                  "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")

    def pause(self) -> None:
        """Stop the server as an operator's restart does (fast shutdown: open sessions are
        ended, new connections refused), keeping its data for `resume`."""
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w",
                  "stop")

    def stop(self) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_root else []
        subprocess.run([*prefix, str(self.bin_dir / "pg_ctl"), "-D", str(self.data),
                        "-m", "immediate", "-w", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL for the session. Missing PostgreSQL fails the run, it never skips."""
    explicit = os.environ.get(ENV_URL)
    if explicit:
        yield explicit
        return
    cluster = Cluster(local_server())
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture
def own_postgres() -> Iterator[tuple[Cluster, str]]:
    """A local PostgreSQL server of the test's own, which it may stop and start (an outage);
    its URL. It needs the local server binaries even when SIFT_TEST_POSTGRES_URL is set."""
    cluster = Cluster(local_server())
    try:
        yield cluster, cluster.start()
    finally:
        cluster.stop()


def local_server() -> Path:
    """The local server's bin directory; fails the run (never skips) when it cannot run."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.fail(f"PostgreSQL tests need {ENV_URL} or a local PostgreSQL server: no "
                    "initdb/pg_ctl under /usr/lib/postgresql/*/bin (apt-get install "
                    "postgresql).", pytrace=False)
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.fail("Running as root, the local PostgreSQL must run as user `postgres` via "
                    f"runuser, which is missing; set {ENV_URL} instead.", pytrace=False)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("Running as root, the local PostgreSQL must run as user `postgres`, "
                        f"which does not exist; set {ENV_URL} instead.", pytrace=False)
    return bin_dir
