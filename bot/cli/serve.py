"""`sift serve`: the long-running bot (web server, Slack, Teams, scheduled sync)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # settings load when the command runs, not for `sift --help`
    from bot.settings import Settings


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


def serving_defaults(settings: Settings, workers: int | None = None) -> Settings:
    """`settings` as a server wants them unlike one-off commands (a copy: the loaded settings
    stay what the files and the environment said): the model on one thread per process,
    and `--workers` when given.

    Measured with bench.serve_load (50 conversations): one thread gave 15.4 answers/s against
    12.5 with one per core, and less CPU per answer; a sync inside `sift serve` then embeds
    on one core, leaving the other to answer.
    """
    update: dict[str, object] = {} if workers is None else {"workers": workers}
    if settings.embedding.threads == 0:
        update["embedding"] = settings.embedding.model_copy(update={"threads": 1})
    return settings.model_copy(update=update)


# How long a thread may keep the interpreter while another waits for it (Python's default is
# 5 ms). `sift serve` runs its database calls, Python through and through, on worker threads;
# the event loop, back from a socket with the next step of another answer, can wait that long
# for one of them to let go. At 1 ms Sift's own time came down a little at no cost in CPU
# (bench.serve_load, 50 conversations, five pairs of runs alternating: p95 145 ms against
# 158, median of the pairs; bench/README.md has each pair).
SWITCH_INTERVAL_S = 0.001


def serving_process() -> None:
    """What the `sift serve` process sets for itself, once, before it starts serving."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def _serve(args: argparse.Namespace) -> int:
    from bot.app import App, load_settings
    from bot.server import serve
    from bot.source_check import check_folders
    from bot.workers import follow_primary

    if args.worker_of is not None:
        follow_primary(args.worker_of)
    settings = serving_defaults(load_settings(args.config), args.workers)
    check_folders(settings)  # as `sift sync` does: one sentence, before anything starts
    serving_process()
    asyncio.run(serve(App(settings), config=args.config,
                      worker=args.worker_of is not None))
    return 0
