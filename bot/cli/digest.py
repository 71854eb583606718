"""`sift digest`: the knowledge team's week (new gaps, answers to review, 👎s, documents past
review, deflection), printed, or posted to [answers] digest_to."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from bot.cli.db import storage_errors

if TYPE_CHECKING:  # the app loads when the command runs, not for `sift --help`
    from bot.answers.digest import Digest
    from bot.app import App

EPILOG = """\
examples:
  sift digest          # print this week's digest
  sift digest --post   # post it to [answers] digest_to (SIFT_ANSWERS__DIGEST_TO), now

`sift serve` posts it on [answers] digest_cron (Mondays 09:00 by default) once digest_to
names a Slack channel.
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "digest", help="the knowledge team's weekly digest (print, or --post it)",
        description="The last seven days: new gaps grouped by topic, answers waiting for "
        "review, the most 👎'd answers, documents past their review date, and how help "
        "channels' questions were resolved.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    parser.add_argument("--post", action="store_true",
                        help="post it to [answers] digest_to instead of printing it")
    parser.set_defaults(handler=_digest)


def _digest(args: argparse.Namespace) -> int:
    from bot.answers import digest
    from bot.app import App, load_settings
    from rag.errors import ConfigError

    app = App(load_settings(args.config))
    to = app.settings.answers.digest_to
    if args.post and not to:
        raise ConfigError("no digest_to", user_message=(
            "Nowhere to post: set [answers] digest_to (SIFT_ANSWERS__DIGEST_TO) to the Slack "
            "channel id of the knowledge team's channel."))
    with storage_errors():
        app.database.require_current()
    found = asyncio.run(digest.gather(app.database, app.embedder, app.document_reviews,
                                      app.answer_drafts))
    if not args.post:
        print(found.text())
        return 0
    return 0 if asyncio.run(_post(app, found, to)) else 1


async def _post(app: App, found: Digest, to: str) -> bool:
    from bot.answers import digest
    from bot.chat.notify import Switchboard
    from bot.slack.notices import SlackNotifier
    from bot.slack.outbound import SlackOutbound
    from bot.slack.spec import SPEC as SLACK
    from rag.errors import ConfigError
    from sync.connectors.common.slack_client import web_client

    slack = SLACK.config(app.settings)
    if not slack.bot_token:
        raise ConfigError("no Slack token", user_message=(
            "Posting the digest needs Slack: set SIFT_SLACK_BOT_TOKEN."))
    switchboard = Switchboard()
    client = web_client(slack.bot_token, slack.api_url, retries=slack.options.api_retries)
    switchboard.add("slack", SlackNotifier(SlackOutbound(client)))
    sent = await digest.post(found, to, switchboard)
    if sent:
        print(f"Posted the digest to {to}.")
    else:
        print(f"Slack refused the digest for {to}: is Sift a member of that channel? "
              "(the log says what Slack answered)")
    return sent
