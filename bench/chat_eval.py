"""`sift sync` then `sift eval` over a sample conversation export a fake platform serves."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bot.cli import main

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "conversations"
PORTS = ("HTTP", "GRPC", "GOSSIP", "DATA", "RAFT", "RAFT_RPC", "PROFILING")


def free_ports() -> dict[str, str]:
    """Its own Weaviate ports: another one may already listen on the defaults."""
    sockets = [socket.socket() for _ in PORTS]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = {f"SIFT_WEAVIATE__{name}_PORT": str(s.getsockname()[1])
             for name, s in zip(PORTS, sockets, strict=True)}
    for s in sockets:
        s.close()
    return ports


def sync_and_eval(server: Any, source: str, questions: str,
                  env: Callable[[Any], Mapping[str, str]]) -> int:
    """Start `server` (a fake with start/stop) on a loop of its own, sync `source` (a
    sift.toml's [[sources]]) into a fresh data directory with only the settings `env` gives,
    then evaluate `questions` (a file under examples/conversations) per retrieval mode."""
    loop = asyncio.new_event_loop()  # the fake answers here while the commands run
    threading.Thread(target=loop.run_forever, daemon=True).start()
    asyncio.run_coroutine_threadsafe(server.start(), loop).result()
    home = Path(tempfile.mkdtemp(prefix="sift-chat-eval-"))
    (home / "sift.toml").write_text(source, encoding="utf-8")
    for name in [n for n in os.environ if n.startswith("SIFT_")]:
        del os.environ[name]  # only this run's settings
    os.environ.update(SIFT_CONFIG=str(home / "sift.toml"), SIFT_DATA_DIR=str(home / "data"),
                      SIFT_WEAVIATE__KEEP_RUNNING_MINUTES="0", **free_ports(), **env(server))
    try:
        started = time.perf_counter()
        code = main(["sync"])
        print(f"sync: {time.perf_counter() - started:.1f} s")
        if code == 0:
            code = main(["eval", str(SAMPLE / questions), "--modes", "bm25,vector,hybrid",
                         "--k", "1,3,5", "--report", str(home / "report.md")])
        return code
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
