"""Runs a Weaviate server process on loopback: start, wait until ready, status, stop."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from rag.errors import RetrievalError

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Ports:
    http: int
    grpc: int
    gossip: int
    data: int
    raft: int
    raft_rpc: int
    profiling: int

    def all(self) -> tuple[int, ...]:
        return (self.http, self.grpc, self.gossip, self.data, self.raft, self.raft_rpc,
                self.profiling)

    def settings(self) -> dict[str, int]:
        """Each port under the SIFT_* variable that sets it."""
        return {f"SIFT_WEAVIATE__{name.upper()}_PORT": getattr(self, name)
                for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class Status:
    running: bool
    pid: int | None
    version: str
    ports: Ports
    data_dir: Path


def _ephemeral_low(default: int = 32768) -> int:
    """Where the kernel's ephemeral ports start (Linux; the IANA 49152 elsewhere)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return default if os.name == "posix" else 49152


def free_port() -> int:
    """A loopback port nothing listens on, for a server started a little later.

    Chosen below the ephemeral range: bind(0) picks from that range, where every outgoing
    connection also takes its local port, so in a busy test run a client socket could take
    the port between this check and the server's bind. And claimed for a few minutes among
    the processes of this machine (`_claim`): parallel test workers each start servers, and
    a port one of them chose may not be bound yet when another one checks it.
    """
    high = _ephemeral_low()
    low = max(1024, high - 12_000)
    for _ in range(100):
        port = secrets.randbelow(high - low) + low
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((LOOPBACK, port))
            except OSError:
                continue
        if _claim(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # all taken: any port
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


PORT_CLAIMS = Path(tempfile.gettempdir()) / "sift-port-claims"
CLAIM_S = 300.0  # long enough for the slowest server start-up to bind its ports


def _claim(port: int) -> bool:
    """Whether this process may have `port`: no other claimed it in the last CLAIM_S."""
    PORT_CLAIMS.mkdir(exist_ok=True)
    marker = PORT_CLAIMS / str(port)
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        return True
    except FileExistsError:
        with contextlib.suppress(OSError):
            if time.time() - marker.stat().st_mtime > CLAIM_S:  # an old claim lapses
                os.utime(marker)
                return True
        return False


def free_ports() -> Ports:
    ports: list[int] = []
    while len(ports) < 7:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return Ports(*ports)


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((LOOPBACK, port)) == 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); treat it as gone.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def _runs_weaviate(pid: int, binary: Path | None) -> bool:
    """Whether `pid` is a Weaviate server: a stale pid file's pid may now belong to anything."""
    if not Path("/proc/self").exists():  # no procfs (macOS): the pid file is all there is
        return True
    try:
        program = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(
            errors="replace")
    except OSError:
        return False
    return "weaviate" in Path(program).name.lower() or (
        binary is not None and program == str(binary))


def backup_dir(data_dir: Path) -> Path:
    """Where a managed server's filesystem backups go: beside its data, not inside it."""
    return data_dir.with_name(data_dir.name + "-backups")


def server_env(data_dir: Path, ports: Ports, api_key: str) -> dict[str, str]:
    """Environment for a single-node server that brings no vectorizers and phones nobody.

    REST listens on loopback only, but Weaviate always binds gRPC on every interface, so the
    managed server requires a per-data-dir API key instead of allowing anonymous access.
    """
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(data_dir)),
        "PERSISTENCE_DATA_PATH": str(data_dir),
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "false",
        "AUTHENTICATION_APIKEY_ENABLED": "true",
        "AUTHENTICATION_APIKEY_ALLOWED_KEYS": api_key,
        "AUTHENTICATION_APIKEY_USERS": "sift",
        "DEFAULT_VECTORIZER_MODULE": "none",
        # The filesystem backup module only (`sift db backup`): into a folder beside the data.
        "ENABLE_MODULES": "backup-filesystem",
        "BACKUP_FILESYSTEM_PATH": str(backup_dir(data_dir)),
        "API_BASED_MODULES_DISABLED": "true",
        "DISABLE_TELEMETRY": "true",
        "PROMETHEUS_MONITORING_ENABLED": "false",
        "GO_PROFILING_PORT": str(ports.profiling),
        "CLUSTER_HOSTNAME": "sift-node",
        "CLUSTER_ADVERTISE_ADDR": LOOPBACK,
        "CLUSTER_BIND_ADDR": LOOPBACK,
        "CLUSTER_GOSSIP_BIND_PORT": str(ports.gossip),
        "CLUSTER_DATA_BIND_PORT": str(ports.data),
        "RAFT_PORT": str(ports.raft),
        "RAFT_INTERNAL_RPC_PORT": str(ports.raft_rpc),
        "RAFT_BOOTSTRAP_EXPECT": "1",
        "GRPC_PORT": str(ports.grpc),
        "QUERY_DEFAULTS_LIMIT": "25",
        "LOG_LEVEL": "warning",
        "LOG_FORMAT": "text",
    }


def _get_json(url: str, timeout: float, api_key: str = "") -> dict[str, object] | None:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
            return json.loads(body) if body else {}
    except (OSError, urllib.error.URLError, ValueError):
        return None


def is_ready(http_port: int, timeout: float = 1.0) -> bool:
    url = f"http://{LOOPBACK}:{http_port}/v1/.well-known/ready"
    return _get_json(url, timeout) is not None


def server_version(http_port: int, api_key: str) -> str:
    meta = _get_json(f"http://{LOOPBACK}:{http_port}/v1/meta", 2.0, api_key) or {}
    return str(meta.get("version", ""))


class ManagedWeaviate:
    """One Weaviate process with its data, log and pid file under `data_dir`."""

    def __init__(self, binary: Path | None, data_dir: Path, ports: Ports,
                 cluster_env: dict[str, str] | None = None, memory_limit: str = "",
                 disk_access: str = "mmap") -> None:
        self.binary = binary
        # The Go runtime's soft heap limit (GOMEMLIMIT, "3GiB"); empty: Go's default.
        self.memory_limit = memory_limit
        # How its segments are read (PERSISTENCE_LSM_ACCESS_STRATEGY): "mmap" maps them, and
        # the pages it touched count in its resident memory; "pread" reads them into buffers,
        # leaving the pages to the kernel's cache, outside it.
        self.disk_access = disk_access
        # Absolute: the server runs inside its data directory and is told the path again.
        self.data_dir = data_dir.absolute()
        self.ports = ports
        # Overrides of server_env() that make this server one node of a cluster.
        self.cluster_env = dict(cluster_env or {})
        self.pid_file = data_dir / "weaviate.pid"
        self.log_file = data_dir / "weaviate.log"
        self.key_file = data_dir / "api-key"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def api_key(self) -> str:
        """The server's API key, created (readable by this user only) on first use."""
        if not self.key_file.exists():
            self._make_data_dir()
            fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(32))
        return self.key_file.read_text().strip()

    def _make_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.data_dir, 0o700)  # also when an older Sift created it world-readable

    def exit_code(self) -> int | None:
        """The exit status of the server this object started, once it has exited; else None."""
        return self._process.poll() if self._process is not None else None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.http}"

    def _recorded_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _pid_alive(pid) and _runs_weaviate(pid, self.binary) else None

    def status(self) -> Status:
        pid = self._recorded_pid()
        running = pid is not None and is_ready(self.ports.http)
        version = server_version(self.ports.http, self.api_key) if running else ""
        return Status(running, pid, version, self.ports, self.data_dir)

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def start(self, timeout_s: float = 90.0) -> int:
        """Start the server (or adopt the one running from this data dir); return its pid."""
        pid = self._recorded_pid()
        if pid is not None and is_ready(self.ports.http):
            return pid
        if self.binary is None:
            raise RetrievalError(
                "No Weaviate binary is installed.",
                user_message="No Weaviate binary is installed: run `sift weaviate install`.",
            )
        busy = {name: port for name, port in self.ports.settings().items()
                if _port_in_use(port)}
        if busy:
            named = ", ".join(f"{name} ({port})" for name, port in busy.items())
            raise RetrievalError(
                f"Ports {list(busy.values())} on {LOOPBACK} are already in use.",
                user_message=f"Cannot start Weaviate: {LOOPBACK} already has something "
                f"listening on {named}; set {'it' if len(busy) == 1 else 'them'} to a free "
                "port or stop the other server.",
            )
        self._make_data_dir()
        with os.fdopen(os.open(self.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
                       "ab") as log:
            self._process = subprocess.Popen(
                [str(self.binary), "--host", LOOPBACK, "--port", str(self.ports.http),
                 "--scheme", "http"],
                cwd=self.data_dir,
                env={**server_env(self.data_dir, self.ports, self.api_key), **self.cluster_env,
                     "PERSISTENCE_LSM_ACCESS_STRATEGY": self.disk_access,
                     **({"GOMEMLIMIT": self.memory_limit} if self.memory_limit else {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in the terminal reaches Sift, which stops us
                umask=0o077,  # its files hold restricted chunks: readable by this user only
            )
        with os.fdopen(os.open(self.pid_file, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o600),
                       "w") as handle:
            handle.write(str(self._process.pid))
        self._wait_ready(timeout_s)
        return self._process.pid

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise RetrievalError(
                    f"Weaviate exited with code {self._process.returncode}:\n{self.log_tail()}",
                    user_message=f"Weaviate stopped during start-up; see {self.log_file}.",
                )
            if is_ready(self.ports.http):
                return
            time.sleep(0.25)
        self.stop()
        raise RetrievalError(
            f"Weaviate was not ready after {timeout_s:.0f}s:\n{self.log_tail()}",
            user_message=f"Weaviate did not become ready within {timeout_s:.0f}s; "
            f"see {self.log_file}.",
        )

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stop the server gracefully (SIGTERM, then SIGKILL). Return whether one was running."""
        pid = self._recorded_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _pid_alive(pid) and time.monotonic() < deadline:
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(timeout=0.2)
            else:
                time.sleep(0.2)
        if _pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)
        self.pid_file.unlink(missing_ok=True)
        return True
