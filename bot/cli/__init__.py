"""The `sift` command line: parses arguments, loads settings once, runs one command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bot.faults import operator_sentence
from rag.errors import ConfigError, SiftError
from storage.errors import StorageError

log = logging.getLogger("sift")

DESCRIPTION = """\
Sift answers questions from your knowledge base in Slack, Teams and the terminal.
It retrieves broadly, has Claude grade every candidate, and answers only from what passed.

Quick start:  sift weaviate install && sift sync && sift ask "how do I reset my MFA?"
Everything runs on embedded defaults; see docs/configuration.md for SIFT_* settings and sift.toml.
"""

Handler = Callable[[argparse.Namespace], int]


def _commands() -> list[Callable[[argparse._SubParsersAction], None]]:
    # Each command module adds its own subparser and sets `handler`; imports stay light
    # because heavy dependencies are imported inside the handlers.
    from bot.cli import (
        answers,
        ask,
        audit,
        channels,
        db,
        digest,
        docs,
        evaluate,
        llm,
        report,
        reviews,
        serve,
        slack,
        sync,
        teams,
        tokens,
        weaviate,
    )

    return [serve.register, weaviate.register, sync.register, ask.register, channels.register,
            db.register, report.register, evaluate.register, slack.register, teams.register,
            docs.register,
            llm.register, audit.register, answers.register, reviews.register,
            digest.register, tokens.register]


CONFIG_HELP = "path to sift.toml (default: $SIFT_CONFIG, else ./sift.toml if present)"


def _global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """--config before or after the command: `sift sync --config x` works like `sift --config x
    sync`. Below the top, an absent option must not overwrite what the top level parsed."""
    parser.add_argument("--config", type=Path, metavar="FILE", help=CONFIG_HELP,
                        default=None if top else argparse.SUPPRESS)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _global_options(child, top=False)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sift", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for register in _commands():
        register(sub)
    _global_options(parser, top=True)
    return parser


def _say_config(args: argparse.Namespace) -> None:
    """Name a settings file found in the working directory, so a forgotten one is noticed
    (a file named by --config or SIFT_CONFIG was chosen on purpose: no need to say it)."""
    import os

    from bot.settings import config_path

    if args.config is not None or os.environ.get("SIFT_CONFIG"):
        return
    path = config_path(None)
    if path is not None:
        print(f"sift: settings from {path.absolute()}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        _say_config(args)
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
    except OSError as exc:
        sentence = operator_sentence(exc)  # a full disk, anywhere Sift writes
        if sentence is None:
            raise
        print(f"sift: {sentence}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("sift: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
