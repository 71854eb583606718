"""Retrieval over the sample conversations: `sift sync` then `sift eval` against the fake Slack.

Run:  .venv/bin/python -m bench.slack_sample_eval

The sample Slack export (examples/conversations/slack-export) is served by the fake Slack
Web API on loopback; a fresh data directory gets a `kind = "slack"` source for its four
channels, `sift sync` indexes it (a managed Weaviate, stopped with each command) and
`sift eval examples/conversations/questions.yaml` reports recall, MRR and nDCG per mode.
"""

from __future__ import annotations

from bench.chat_eval import SAMPLE, sync_and_eval
from tests.fakes.slack_export import load_export
from tests.fakes.slack_payloads import BOT_TOKEN
from tests.fakes.slack_server import FakeSlack

SOURCE = """[[sources]]
name = "chat"
kind = "slack"
[sources.slack]
channels = ["#it-help", "#eng-deploys", "#random", "#sec-incident"]
min_chars = 120
"""


def run() -> int:
    server = FakeSlack()
    load_export(server, SAMPLE / "slack-export")
    return sync_and_eval(server, SOURCE, "questions.yaml", lambda s: {
        "SIFT_SLACK_BOT_TOKEN": BOT_TOKEN, "SIFT_SLACK_API_URL": s.api_url})


if __name__ == "__main__":
    raise SystemExit(run())
