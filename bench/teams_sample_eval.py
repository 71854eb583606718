"""Retrieval over the sample Teams tenant: `sift sync` then `sift eval` against the fake Graph.

Run:  .venv/bin/python -m bench.teams_sample_eval

The sample tenant (examples/conversations/teams-export) is served by the fake Microsoft
Graph (and its fake Entra) on loopback; a fresh data directory gets a `kind = "teams"`
source for its two teams, read with the bot's app settings (SIFT_TEAMS_*), `sift sync`
indexes it (a managed Weaviate, stopped with each command) and `sift eval
examples/conversations/teams-questions.yaml` reports recall, MRR and nDCG per mode.
"""

from __future__ import annotations

from bench.chat_eval import SAMPLE, sync_and_eval
from tests.fakes.teams_export import load_export
from tests.fakes.teams_graph import CLIENT_ID, SECRET, TENANT, FakeTeamsGraph
from tests.fakes.tls import local_ca

SOURCE = """[[sources]]
name = "teams-chat"
kind = "teams"
[sources.teams]
teams = ["IT", "Engineering"]
channels = ["it-help", "General", "sec-private", "deploys"]
min_chars = 120
"""


def run() -> int:
    server = FakeTeamsGraph()
    load_export(server, SAMPLE / "teams-export")
    return sync_and_eval(server, SOURCE, "teams-questions.yaml", lambda s: {
        "SIFT_TEAMS_APP_ID": CLIENT_ID, "SIFT_TEAMS_APP_PASSWORD": SECRET,
        "SIFT_TEAMS_TENANT_ID": TENANT, "SIFT_PERMISSIONS__GRAPH_URL": s.graph_url,
        "SIFT_PERMISSIONS__LOGIN_URL": s.login_url, "SIFT_TEAMS__ENABLED": "false",
        "REQUESTS_CA_BUNDLE": str(local_ca().bundle)})  # the fake Entra's HTTPS


if __name__ == "__main__":
    raise SystemExit(run())
