"""The `sift` command line: parses arguments, loads settings once, runs one command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rag.errors import ConfigError, SiftError
from storage.errors import StorageError

log = logging.getLogger("sift")

DESCRIPTION = """\
Sift answers questions from your knowledge base in Slack, Teams and the terminal.
It retrieves broadly, has Claude grade every candidate, and answers only from what passed.

Quick start:  sift weaviate install && sift sync && sift ask "how do I reset my MFA?"
Everything runs on embedded defaults; see the README for SIFT_* settings and sift.toml.
"""

Handler = Callable[[argparse.Namespace], int]


def _commands() -> list[Callable[[argparse._SubParsersAction], None]]:
    # Each command module adds its own subparser and sets `handler`; imports stay light
    # because heavy dependencies are imported inside the handlers.
    from bot.cli import ask, channels, db, docs, evaluate, report, serve, slack, sync, weaviate

    return [serve.register, weaviate.register, sync.register, ask.register, channels.register,
            db.register, report.register, evaluate.register, slack.register, docs.register]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sift", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="path to sift.toml (default: $SIFT_CONFIG, else none)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for register in _commands():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except ConfigError as exc:
        print(f"sift: {exc.user_message}", file=sys.stderr)
        log.debug("configuration error: %s", exc)
        return 2
    except SiftError as exc:
        print(f"sift: {exc.user_message}", file=sys.stderr)
        if str(exc) != exc.user_message:
            print(f"      cause: {exc}", file=sys.stderr)
        return 1
    except StorageError as exc:  # its message is already one sentence naming the problem
        print(f"sift: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("sift: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
