"""`sift reviews list|keep`: which documents and approved answers are due for their owner's
review, and an owner's (or admin's) word that one is still true."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from bot.cli.db import cli_actor, storage_errors

if TYPE_CHECKING:  # the app loads when a command runs, not for `sift --help`
    from bot.app import App
    from storage.reviews import ReviewState

EPILOG = """\
examples:
  sift reviews list                       # due and expired, soonest first
  sift reviews list --state all --json
  sift reviews keep handbook vpn-setup.md # still true: verified from today

A source is reviewed when its [[sources]] table sets `review_days` (and `owner`, who is
told); approved answers when [answers] review_days is set (180 by default).
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "reviews", help="documents and answers due for review; confirm one (list, keep)",
        description="Each reviewed source's documents stay verified for its `review_days` "
        "after they last changed or their owner confirmed them; past that, answers citing "
        "them say so.", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="review states (default: due and expired)")
    listing.add_argument("--state", default="open",
                         choices=("open", "due", "expired", "verified", "all"),
                         help="open: due or expired")
    listing.add_argument("--json", action="store_true", help="one JSON array")
    listing.set_defaults(handler=_list)
    keep = actions.add_parser("keep", help="confirm a document is still true (verified now)")
    keep.add_argument("source", help="the source's name (sift reviews list shows it)")
    keep.add_argument("doc_id", help="the document's id within it")
    keep.add_argument("--json", action="store_true")
    keep.set_defaults(handler=_keep)


def _app(args: argparse.Namespace) -> App:
    from bot.app import App, load_settings

    app = App(load_settings(args.config))
    with storage_errors():
        app.database.require_current()
    return app


def _as_json(r: ReviewState) -> dict[str, object]:
    return {"source": r.source, "doc_id": r.doc_id, "title": r.title, "url": r.url,
            "state": r.state, "verified_by": r.verified_by,
            "last_reviewed": r.last_reviewed.isoformat() if r.last_reviewed else None,
            "review_by": r.review_by.isoformat() if r.review_by else None}


def _line(r: ReviewState) -> str:
    by = f"{r.review_by:%Y-%m-%d}" if r.review_by else "now"
    return f"{r.state:<8}  review by {by}  {r.source}  {r.doc_id}  {r.title}"


def _list(args: argparse.Namespace) -> int:
    app = _app(args)
    with storage_errors():
        found = app.document_reviews.states()
    wanted = {"open": ("due", "expired"), "all": ("due", "expired", "verified")}.get(
        args.state, (args.state,))
    found = [r for r in found if r.state in wanted]
    if args.json:
        print(json.dumps([_as_json(r) for r in found], ensure_ascii=False, indent=2))
        return 0
    if not app.document_reviews.tracked:
        print("No source is reviewed: set `review_days` in a [[sources]] table.")
    elif not found:
        print("Nothing is due for review." if args.state == "open" else
              f"No {args.state} documents.")
    for r in found:
        print(_line(r))
    return 0


def _keep(args: argparse.Namespace) -> int:
    from rag.errors import InputError

    app = _app(args)
    reviews = app.document_reviews
    with storage_errors():
        known = {(r.source, r.doc_id) for r in reviews.states([args.doc_id])}
        if (args.source, args.doc_id) not in known:
            raise InputError(f"no reviewed document {args.source}/{args.doc_id}", user_message=(
                f"Source '{args.source}' has no reviewed document '{args.doc_id}' (sift "
                "reviews list --state all shows them; the source needs `review_days`)."))
        actor = cli_actor()
        reviews.keep(args.source, args.doc_id, actor)
        app.audit.record(actor, "document_verified", f"{args.source}:{args.doc_id}")
        [now] = [r for r in reviews.states([args.doc_id]) if r.source == args.source]
    print(json.dumps(_as_json(now)) if args.json else
          f"Verified {args.source} {args.doc_id} until {now.review_by:%Y-%m-%d}.")
    return 0
