"""`sift audit --since 7d [--json]`: the admin actions of a window, newest first."""

from __future__ import annotations

import argparse
import json

from bot.cli.db import duration, storage_errors


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "audit", help="list admin actions (sign-ins, policy edits, overrides, started syncs)",
        description="Every admin action in the audit log since a duration ago: who, from "
        "where, what, and the value before and after. Kept for "
        "SIFT_STORAGE__AUDIT_RETENTION_DAYS days.")
    parser.add_argument("--since", required=True, type=duration, metavar="DURATION",
                        help="how far back, e.g. 24h, 7d or 2w")
    parser.add_argument("--action", default="", help="only this action (e.g. sign_in_failed)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.set_defaults(handler=_audit)


def _audit(args: argparse.Namespace) -> int:
    from bot.app import App, load_settings
    from storage.audit import AuditLog
    from storage.columns import utc_now

    app = App(load_settings(args.config))
    with storage_errors():
        app.database.require_current()
        events = AuditLog(app.database).since(utc_now() - args.since, action=args.action,
                                              limit=100_000)
    if args.json:
        for event in events:
            print(json.dumps(event.as_json(), ensure_ascii=False))
        return 0
    if not events:
        print("No admin action in that window.")
    for e in events:
        change = ""
        if e.before is not None or e.after is not None:
            change = f"  {json.dumps(e.before)} -> {json.dumps(e.after)}"
        print(f"{e.at:%Y-%m-%d %H:%M:%S}  {e.actor}  {e.address or '-'}  {e.action}  "
              f"{e.target}{change}")
    return 0
