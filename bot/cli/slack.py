"""`sift slack manifest`: the Slack app manifest for the features the settings turn on."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("slack", help="Slack helpers (the app manifest)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    made = actions.add_parser(
        "manifest", help="print the Slack app manifest (YAML) for the current settings",
        description="Each scope and event is asked for only when its feature is on: "
        "SIFT_SLACK__SLASH_COMMAND, __APP_HOME, __ASSISTANT, __PRIVATE_CHANNELS, __DIRECTORY, "
        "and a `kind = \"slack\"` source (channel history, private channels and members).")
    made.add_argument("--url", default="",
                      help="the public HTTPS address of `sift serve` (HTTP mode); default: "
                      "SIFT_PUBLIC_URL, else https://sift.example.com")
    made.add_argument("--socket-mode", action="store_true",
                      help="no request URLs: Sift connects out with SIFT_SLACK_APP_TOKEN")
    made.set_defaults(handler=_manifest)


def _manifest(args: argparse.Namespace) -> int:
    from bot.app import load_settings
    from bot.slack import spec
    from bot.slack.manifest import EXAMPLE_URL, Features, manifest, public_base, to_yaml

    settings = load_settings(args.config)
    s = spec.config(settings).options
    url = public_base(args.url or settings.public_url or EXAMPLE_URL)
    features = Features(s.slash_command, s.app_home, s.assistant, s.private_channels,
                        s.directory, channel_source=any(
                            source.kind == "slack" for source in settings.resolved_sources),
                        files=settings.files.enabled)
    print(to_yaml(manifest(features, url, socket_mode=args.socket_mode)), end="")
    return 0
