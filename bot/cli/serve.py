"""`sift serve`: the long-running bot (web server, Slack, Teams, scheduled sync)."""

from __future__ import annotations

import argparse
import asyncio


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "serve", help="run the bot: web server, Slack/Teams adapters and scheduled sync",
        description="Start the managed Weaviate (unless SIFT_WEAVIATE_URL is set), apply "
        "database migrations, sync sources in the background, and serve HTTP on "
        "SIFT_HOST:SIFT_PORT (GET /healthz). Ctrl-C stops everything it started.",
    )
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    from bot.app import App, load_settings
    from bot.server import serve

    app = App(load_settings(args.config))
    asyncio.run(serve(app))
    return 0
