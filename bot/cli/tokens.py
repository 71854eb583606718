"""`sift tokens create|list|revoke`: personal access tokens for the HTTP API and MCP."""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from typing import TYPE_CHECKING

from bot.cli.db import cli_actor, duration, human, storage_errors
from rag.errors import InputError

if TYPE_CHECKING:
    from bot.app import App

DEFAULT_EXPIRY = "90d"
SHOWN_ONCE = ("Keep it now: Sift keeps only its hash and cannot show it again. "
              "Send it as `Authorization: Bearer <token>` (docs/mcp-and-api.md).")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "tokens", help="personal access tokens for the HTTP API and MCP (create, list, revoke)",
        description="A personal access token lets another tool (Claude, Cursor, a script) ask "
        "Sift as one person: it sees what that person's email sees in a direct message.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="make a token acting as one email (shown once)")
    create.add_argument("--as", dest="as_email", required=True, metavar="EMAIL",
                        help="the person the token acts as: public documents and those of the "
                        "[[groups]] their email belongs to")
    create.add_argument("--expires", default=DEFAULT_EXPIRY, metavar="DURATION",
                        help=f"how long it lasts, e.g. 30d or 12h, or 'never' "
                        f"(default {DEFAULT_EXPIRY})")
    create.add_argument("--label", default="", help="what it is for, e.g. 'Claude Desktop'")
    create.add_argument("--json", action="store_true", help="print one JSON object")
    create.set_defaults(handler=_create)
    listing = actions.add_parser("list", help="list tokens (never their secrets)")
    listing.add_argument("--as", dest="as_email", default="", metavar="EMAIL",
                         help="only the tokens acting as this email")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.set_defaults(handler=_list)
    revoke = actions.add_parser("revoke", help="revoke a token by its id (from `sift tokens "
                                "list`): it stops working at once")
    revoke.add_argument("id", type=int, help="the token's id")
    revoke.set_defaults(handler=_revoke)


def _expiry(text: str) -> timedelta | None:
    if text.strip().lower() == "never":
        return None
    try:
        return duration(text)
    except argparse.ArgumentTypeError as exc:
        raise InputError("bad --expires", user_message=f"--expires: {exc}") from exc


def _email(text: str) -> str:
    email = text.strip()
    if "@" not in email or any(c.isspace() for c in email):
        raise InputError("bad --as", user_message=f"--as needs an email address (got {text!r}).")
    return email


def _app(args: argparse.Namespace) -> App:
    from bot.app import App, load_settings

    app = App(load_settings(args.config))
    app.database.upgrade()  # a first token on a new installation needs the table
    return app


def _create(args: argparse.Namespace) -> int:
    email, expires = _email(args.as_email), _expiry(args.expires)
    app = _app(args)
    with storage_errors():
        made = app.tokens.create(email, expires_in=expires, label=args.label,
                                 created_by=cli_actor())
        app.audit.record(cli_actor(), "token_created", f"token {made.token.id}", after={
            "email": email, "expires_at": made.token.expires_at.isoformat()
            if made.token.expires_at else None, "label": args.label})
    if args.json:
        print(json.dumps({**made.token.as_json(made.token.created_at), "token": made.secret}))
        return 0
    until = f"expires in {human(expires)}" if expires else "never expires"
    print(f"Token {made.token.id} acts as {email} and {until}:\n\n  {made.secret}\n\n"
          f"{SHOWN_ONCE}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from storage.columns import utc_now

    app = _app(args)
    with storage_errors():
        tokens = app.tokens.list(email=args.as_email.strip())
    now = utc_now()
    if args.json:
        for token in tokens:
            print(json.dumps(token.as_json(now), ensure_ascii=False))
        return 0
    if not tokens:
        print("No tokens yet: `sift tokens create --as EMAIL` makes one.")
    for t in tokens:
        expiry = f"{t.expires_at:%Y-%m-%d}" if t.expires_at else "never"
        used = f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never"
        print(f"{t.id:>4}  {t.state(now):<7}  {t.hint}  {t.email}  expires {expiry}  "
              f"last used {used}  {t.label}".rstrip())
    return 0


def _revoke(args: argparse.Namespace) -> int:
    app = _app(args)
    with storage_errors():
        token = app.tokens.revoke(args.id)
        if token is None:
            raise InputError("unknown token", user_message=f"There is no token {args.id}; "
                             "`sift tokens list` shows their ids.")
        app.audit.record(cli_actor(), "token_revoked", f"token {token.id}",
                         before={"email": token.email})
    print(f"Token {token.id} ({token.email}) is revoked: it no longer opens the API or MCP.")
    return 0
