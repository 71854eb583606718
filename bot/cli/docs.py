"""`sift docs boost|demote|pin|hide|show|reset|list`: an admin's say over how documents rank."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.cli.db import cli_actor, storage_errors

if TYPE_CHECKING:  # the app loads when a command runs, not for `sift --help`
    from bot.app import App
    from storage.overrides import OverrideRow

EXPLAIN = """\
Every answer starts from ~20 retrieved passages. Each document's retrieval score is multiplied
by a prior learned from its history (how often the grader found it relevant when retrieved,
and the 👍/👎 on answers that cited it; bounded to 0.7x-1.4x, fading with a 90-day half-life,
one voice per person). An override replaces that prior for one document:

  pin     first among the candidates whenever it is retrieved, and always passed to the answer
  boost   a fixed multiplier (default 1.4, or --factor)
  demote  a fixed multiplier (default 0.7, or --factor)
  hide    never retrieved: filtered inside the search itself (`show` undoes it)
  reset   remove the override; the learned prior applies again

DOC is the document id as shown by `sift ask --explain` or `sift report` (e.g. a file path
for a folder source). Overrides take effect on the next question; no restart is needed.
"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("docs", help="pin, boost, demote or hide documents in the ranking",
                            description=EXPLAIN,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for kind, text in (("pin", "put the document first whenever it is retrieved"),
                       ("boost", "raise the document's retrieval score by a fixed factor"),
                       ("demote", "lower the document's retrieval score by a fixed factor"),
                       ("hide", "never retrieve the document")):
        action = actions.add_parser(kind, help=text, description=f"{text[0].upper()}"
                                    f"{text[1:]}. Replaces any earlier override of it.")
        action.add_argument("doc_id", metavar="DOC", help="the document id")
        if kind in ("boost", "demote"):
            action.add_argument("--factor", type=_factor(kind), metavar="F",
                                help=f"the multiplier (default {1.4 if kind == 'boost' else 0.7}"
                                f"; {'above' if kind == 'boost' else 'below'} 1)")
        action.add_argument("--note", default="", help="why (shown by `sift docs list`)")
        action.set_defaults(handler=_set, kind=kind)
    show = actions.add_parser("show", help="undo `hide`: the document can be retrieved again")
    show.add_argument("doc_id", metavar="DOC")
    show.set_defaults(handler=_show)
    reset = actions.add_parser("reset", help="remove the document's override, whatever it is")
    reset.add_argument("doc_id", metavar="DOC")
    reset.set_defaults(handler=_reset)
    listing = actions.add_parser("list", help="the overrides in force")
    listing.add_argument("--kind", choices=("pin", "boost", "demote", "hide"))
    listing.set_defaults(handler=_list)


def _factor(kind: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"--factor takes a number, not {text!r}") from exc
        boost = kind == "boost"
        if not (1.0 < value <= 10.0 if boost else 0.0 < value < 1.0):
            allowed = "above 1 (at most 10)" if boost else "between 0 and 1"
            raise argparse.ArgumentTypeError(f"a {kind} factor must be {allowed}, not {text}")
        return value
    return parse


def _app(args: argparse.Namespace) -> App:
    from bot.app import App, load_settings

    app = App(load_settings(args.config))
    with storage_errors():
        app.database.require_current()
    return app


def _was(row: OverrideRow | None) -> dict[str, object] | None:
    return None if row is None else {"kind": row.kind, "factor": row.factor,
                                     "set_by": row.set_by}


def _set(args: argparse.Namespace) -> int:
    app = _app(args)
    factor = getattr(args, "factor", None)
    with storage_errors():
        found = app.overrides.for_documents([args.doc_id]).get(args.doc_id)
        app.overrides.set(args.doc_id, args.kind, factor=factor, note=args.note,
                          set_by="cli")
        app.audit.record(cli_actor(), "override", f"document {args.doc_id}",
                         before=_was(found), after={"kind": args.kind, "factor": factor})
    how = f" x{factor:g}" if factor else ""
    print(f"{args.doc_id}: {args.kind}{how} (from the next question on)")
    return 0


def _show(args: argparse.Namespace) -> int:
    app = _app(args)
    with storage_errors():
        current = app.overrides.for_documents([args.doc_id]).get(args.doc_id)
        if current is None or current.kind != "hide":
            print(f"{args.doc_id} is not hidden; nothing changed.")
            return 0
        app.overrides.reset(args.doc_id)
        app.audit.record(cli_actor(), "override", f"document {args.doc_id}",
                         before=_was(current))
    print(f"{args.doc_id}: no longer hidden")
    return 0


def _reset(args: argparse.Namespace) -> int:
    app = _app(args)
    with storage_errors():
        found = app.overrides.for_documents([args.doc_id]).get(args.doc_id)
        removed = app.overrides.reset(args.doc_id)
        if removed:
            app.audit.record(cli_actor(), "override", f"document {args.doc_id}",
                             before=_was(found))
    print(f"{args.doc_id}: override removed; the learned prior applies" if removed
          else f"{args.doc_id} had no override; nothing changed.")
    return 0


def _list(args: argparse.Namespace) -> int:
    app = _app(args)
    with storage_errors():
        rows = app.overrides.all(args.kind)
    if not rows:
        print("No overrides: every document ranks by retrieval and its learned prior.")
        return 0
    for row in rows:
        factor = f" x{row.factor:g}" if row.factor is not None else ""
        note = f"  ({row.note})" if row.note else ""
        print(f"{row.kind:<7}{factor:<7} {row.doc_id}  {row.updated_at:%Y-%m-%d %H:%M}{note}")
    return 0
