"""`sift serve`: the long-running bot (web server, Slack, Teams, scheduled sync)."""

from __future__ import annotations

import argparse
import asyncio


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "serve", help="run the bot: web server, Slack/Teams adapters and scheduled sync",
        description="Start the managed Weaviate (unless SIFT_WEAVIATE_URL is set), apply "
        "database migrations, sync sources in the background, and serve HTTP on "
        "SIFT_HOST:SIFT_PORT (GET /healthz, GET /readyz). Ctrl-C stops everything it "
        "started.",
    )
    parser.add_argument(
        "--workers", type=_at_least_one, metavar="N",
        help="processes serving the port (default SIFT_WORKERS, 1): one process uses one "
        "core for Sift's own work, so on a busy machine use about one per core")
    parser.add_argument("--worker-of", type=int, metavar="PID", help=argparse.SUPPRESS)
    parser.set_defaults(handler=_serve)


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes >= 1, "
                                         f"not {text!r}")
    return value


def _serve(args: argparse.Namespace) -> int:
    from bot.app import App, load_settings
    from bot.server import serve
    from bot.workers import follow_primary

    if args.worker_of is not None:
        follow_primary(args.worker_of)
    settings = load_settings(args.config)
    if args.workers is not None:
        settings.workers = args.workers
    asyncio.run(serve(App(settings), config=args.config,
                      worker=args.worker_of is not None))
    return 0
