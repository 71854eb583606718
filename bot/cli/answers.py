"""`sift answers list|show|approve|edit|reject`: review the answers captured from threads."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import TYPE_CHECKING

from bot.cli.db import cli_actor, storage_errors

if TYPE_CHECKING:  # the app loads when a command runs, not for `sift --help`
    from bot.answers.review import Reviewed
    from bot.app import App
    from storage.answers import StoredDraft

EPILOG = """\
examples:
  sift answers list                       # pending drafts, newest first
  sift answers show 12
  sift answers approve 12                 # indexed at once, then the question is asked again
  sift answers approve 12 --answer "Use the VPN portal's token page."
  sift answers reject 13 --reason "outdated: the portal moved"
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "answers", help="review answers captured from threads (list, show, approve, reject)",
        description="Replies people gave in threads where Sift could not answer, captured by "
        "the asker's ✅ or the \"Save to Sift\" shortcut. Approved answers are indexed in the "
        "built-in `answers` source and cited to their thread.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="drafts by status (default: pending)")
    listing.add_argument("--status", default="pending",
                         choices=("pending", "approved", "rejected", "all"))
    listing.add_argument("--json", action="store_true", help="one JSON array")
    listing.set_defaults(handler=_list)
    show = actions.add_parser("show", help="one draft with its thread")
    show.add_argument("id", type=int)
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_show)
    for name, helptext in (("approve", "approve (optionally with new words) and index it"),
                           ("edit", "change the question or answer (re-indexed if approved)")):
        action = actions.add_parser(name, help=helptext)
        action.add_argument("id", type=int)
        action.add_argument("--question", default=None, help="the standalone question")
        action.add_argument("--answer", default=None, help="the answer's text")
        action.add_argument("--json", action="store_true")
        action.set_defaults(handler=_review, verb=name)
    reject = actions.add_parser("reject", help="reject with a reason (leaves the index)")
    reject.add_argument("id", type=int)
    reject.add_argument("--reason", required=True)
    reject.add_argument("--json", action="store_true")
    reject.set_defaults(handler=_review, verb="reject")


def _app(args: argparse.Namespace) -> App:
    from bot.app import App, load_settings

    app = App(load_settings(args.config))
    with storage_errors():
        app.database.require_current()
    return app


def _line(d: StoredDraft) -> str:
    return (f"{d.id:>4}  {d.status:<8}  {d.answered_at:%Y-%m-%d}  "
            f"{d.author_name or d.author} in {d.channel_name}  {d.question}")


def _list(args: argparse.Namespace) -> int:
    app = _app(args)
    with storage_errors():
        drafts = app.answer_drafts.listed("" if args.status == "all" else args.status)
    if args.json:
        print(json.dumps([d.as_json() for d in drafts], ensure_ascii=False, indent=2))
        return 0
    if not drafts:
        print(f"No {args.status} answers.")
    for d in drafts:
        print(_line(d))
    return 0


def _show(args: argparse.Namespace) -> int:
    from rag.errors import InputError

    app = _app(args)
    with storage_errors():
        d = app.answer_drafts.get(args.id)
    if d is None:
        raise InputError(f"no draft {args.id}",
                         user_message=f"There is no answer draft {args.id} (sift answers list).")
    if args.json:
        print(json.dumps(d.as_json(), ensure_ascii=False, indent=2))
        return 0
    print(_line(d))
    print(f"link: {d.link or '-'}\naccess: {', '.join(d.access) or 'nobody'}\n")
    print(f"Question: {d.question}\n\nAnswer:\n{d.answer}\n")
    if d.context:
        print(f"Thread:\n{d.context}\n")
    if d.reason:
        print(f"Reason: {d.reason}")
    return 0


def _review(args: argparse.Namespace) -> int:
    reviewed = asyncio.run(_reviewed(_app(args), args))
    d = reviewed.draft
    if args.json:
        out = d.as_json()
        if reviewed.reasked is not None:
            out["reasked"] = {"outcome": reviewed.reasked.outcome,
                              "cited_entry": reviewed.reasked.cited_entry,
                              "closed_gaps": list(reviewed.reasked.closed)}
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    print(f"Answer {d.id} is {d.status}.")
    if reviewed.reasked is not None:
        r = reviewed.reasked
        print(f"Asked again: {r.outcome.replace('_', ' ')}"
              f"{' from this answer' if r.cited_entry else ''}; "
              f"{len(r.closed)} gap question(s) closed.")
    return 0


async def _reviewed(app: App, args: argparse.Namespace) -> Reviewed:
    from bot.runtime import connected_index

    actor = cli_actor()
    async with connected_index(app.weaviate_run, app.index(), announce=not args.json) as index:
        try:
            review = app.answer_review(app.sync_runner(index), app.pipeline(
                index, cache=app.grade_cache, priors=app.document_priors))
            with storage_errors():
                if args.verb == "approve":
                    return await review.approve(args.id, actor, question=args.question,
                                                answer=args.answer)
                if args.verb == "edit":
                    return await review.edit(args.id, actor, question=args.question,
                                             answer=args.answer)
                return await review.reject(args.id, actor, args.reason)
        finally:
            await app.aclose()
