"""`sift teams package`: the Teams app package to upload, for this bot's app id."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _website(text: str) -> str:
    from bot.teams.app_package import website_url

    try:
        return website_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("teams", help="Teams helpers (the app package to upload)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    made = actions.add_parser(
        "package", help="write the Teams app package (a zip) for this bot's app id",
        description="Zip deploy/teams/manifest.json (with the bot's app id filled in) and its "
        "two icons into the file Teams admin center (Manage apps, Upload new app) or Teams "
        "(Apps, Manage your apps, Upload an app) takes. docs/teams.md, step 5.")
    made.add_argument("--app-id", default="",
                      help="the Azure Bot's Microsoft App ID (default: SIFT_TEAMS_APP_ID)")
    made.add_argument("--website", type=_website,
                      help="https address of your page about Sift; its /privacy and /terms "
                      "are the links Teams shows every user (default: the example's)")
    made.add_argument("--version", help="the app's version, e.g. 1.0.1 (raise it for every "
                      "upload of a changed package)")
    made.add_argument("--out", type=Path, default=Path("sift-teams.zip"),
                      help="where to write the package (default: sift-teams.zip)")
    made.set_defaults(handler=_package)


def _package(args: argparse.Namespace) -> int:
    from bot.app import load_settings
    from bot.teams import spec
    from bot.teams.app_package import build, template
    from rag.errors import ConfigError

    app_id = args.app_id or spec.config(load_settings(args.config)).app_id
    if not app_id:
        raise ConfigError("no app id", user_message="Pass --app-id with the Azure Bot's "
                          "Microsoft App ID, or set SIFT_TEAMS_APP_ID.")
    path = build(app_id, args.out, args.website, args.version)
    print(f"wrote {path}")
    if args.website is None:  # Teams shows these links to every user: say whose they are
        site = template()["developer"]["websiteUrl"]
        print(f"note: the app's website, privacy and terms links point at {site} (an "
              "example); pass --website https://… with your own page", file=sys.stderr)
    return 0
