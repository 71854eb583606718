"""Retrieval over the sample conversations: `sift sync` then `sift eval` against the fake Slack.

Run:  .venv/bin/python -m bench.slack_sample_eval

The sample Slack export (examples/conversations/slack-export) is served by the fake Slack
Web API on loopback; a fresh data directory gets a `kind = "slack"` source for its four
channels, `sift sync` indexes it (a managed Weaviate, stopped with each command) and
`sift eval examples/conversations/questions.yaml` reports recall, MRR and nDCG per mode.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from pathlib import Path

from bot.cli import main
from tests.fakes.slack_export import load_export
from tests.fakes.slack_payloads import BOT_TOKEN
from tests.fakes.slack_server import FakeSlack

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "conversations"
SOURCE = """[[sources]]
name = "chat"
kind = "slack"
[sources.slack]
channels = ["#it-help", "#eng-deploys", "#random", "#sec-incident"]
min_chars = 120
"""


def run() -> int:
    loop = asyncio.new_event_loop()  # the fake answers here while the commands run
    threading.Thread(target=loop.run_forever, daemon=True).start()
    server = FakeSlack()
    load_export(server, SAMPLE / "slack-export")
    asyncio.run_coroutine_threadsafe(server.start(), loop).result()
    home = Path(tempfile.mkdtemp(prefix="sift-slack-eval-"))
    (home / "sift.toml").write_text(SOURCE, encoding="utf-8")
    for name in [n for n in os.environ if n.startswith("SIFT_")]:
        del os.environ[name]  # only this run's settings
    os.environ.update(SIFT_CONFIG=str(home / "sift.toml"), SIFT_DATA_DIR=str(home / "data"),
                      SIFT_SLACK_BOT_TOKEN=BOT_TOKEN, SIFT_SLACK_API_URL=server.api_url,
                      SIFT_WEAVIATE__KEEP_RUNNING_MINUTES="0")
    try:
        code = main(["sync"])
        if code == 0:
            code = main(["eval", str(SAMPLE / "questions.yaml"), "--modes",
                         "bm25,vector,hybrid", "--k", "1,3,5",
                         "--report", str(home / "report.md")])
        return code
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result()
        loop.call_soon_threadsafe(loop.stop)


if __name__ == "__main__":
    raise SystemExit(run())
