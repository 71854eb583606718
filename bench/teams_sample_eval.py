"""Retrieval over the sample Teams tenant: `sift sync` then `sift eval` against the fake Graph.

Run:  .venv/bin/python -m bench.teams_sample_eval

The sample tenant (examples/conversations/teams-export) is served by the fake Microsoft
Graph (and its fake Entra) on loopback; a fresh data directory gets a `kind = "teams"`
source for its two teams, read with the bot's app settings (SIFT_TEAMS_*), `sift sync`
indexes it (a managed Weaviate, stopped with each command) and `sift eval
examples/conversations/teams-questions.yaml` reports recall, MRR and nDCG per mode.
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from bot.cli import main
from tests.fakes.teams_export import load_export
from tests.fakes.teams_graph import CLIENT_ID, SECRET, TENANT, FakeTeamsGraph
from tests.fakes.tls import local_ca

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "conversations"
SOURCE = """[[sources]]
name = "teams-chat"
kind = "teams"
[sources.teams]
teams = ["IT", "Engineering"]
channels = ["it-help", "General", "sec-private", "deploys"]
min_chars = 120
"""


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


def run() -> int:
    loop = asyncio.new_event_loop()  # the fake answers here while the commands run
    threading.Thread(target=loop.run_forever, daemon=True).start()
    server = FakeTeamsGraph()
    load_export(server, SAMPLE / "teams-export")
    asyncio.run_coroutine_threadsafe(server.start(), loop).result()
    home = Path(tempfile.mkdtemp(prefix="sift-teams-eval-"))
    (home / "sift.toml").write_text(SOURCE, encoding="utf-8")
    for name in [n for n in os.environ if n.startswith("SIFT_")]:
        del os.environ[name]  # only this run's settings
    os.environ.update(SIFT_CONFIG=str(home / "sift.toml"), SIFT_DATA_DIR=str(home / "data"),
                      SIFT_TEAMS_APP_ID=CLIENT_ID, SIFT_TEAMS_APP_PASSWORD=SECRET,
                      SIFT_TEAMS_TENANT_ID=TENANT, SIFT_PERMISSIONS__GRAPH_URL=server.graph_url,
                      SIFT_PERMISSIONS__LOGIN_URL=server.login_url,
                      SIFT_TEAMS__ENABLED="false", SIFT_WEAVIATE__KEEP_RUNNING_MINUTES="0",
                      REQUESTS_CA_BUNDLE=str(local_ca().bundle),  # the fake Entra's HTTPS
                      **free_ports())
    try:
        started = time.perf_counter()
        code = main(["sync"])
        print(f"sync: {time.perf_counter() - started:.1f} s")
        if code == 0:
            code = main(["eval", str(SAMPLE / "teams-questions.yaml"), "--modes",
                         "bm25,vector,hybrid", "--k", "1,3,5",
                         "--report", str(home / "report.md")])
        return code
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result()
        loop.call_soon_threadsafe(loop.stop)


if __name__ == "__main__":
    raise SystemExit(run())
