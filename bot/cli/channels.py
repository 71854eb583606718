"""`sift channels list|show|set|remove`: the channel policies, edited while Sift runs."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.chat.policy import (
    DIRECT_CHANNEL,
    ChannelPolicy,
    Respond,
    check_channel,
    policy_from,
    policy_settings,
    validate,
)
from bot.cli.db import cli_actor

EPILOG = """\
examples:
  sift channels set slack C0123ABCD --respond questions --sources handbook,wiki
  sift channels set slack C0HR00001 --label "#ask-hr" --sources hr --audience hr
  sift channels set slack '*' --follow-ups off        # the default for every other channel
  sift channels set teams @direct --sources handbook  # personal chats
  sift channels show slack C0123ABCD --json
A change applies to the next message; no restart is needed.
"""


if TYPE_CHECKING:  # the app loads when a command runs, not for `sift --help`
    from bot.app import App


def _csv(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _switch(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("on", "true", "yes", "1"):
        return True
    if lowered in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not on or off")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "channels", help="list, show, set or remove channel policies",
        description="A channel policy says how Sift behaves in one conversation: which sources "
        "answer there, whether it answers questions without an @mention, whom to call for "
        "help. `*` is the policy of channels without one, `@direct` that of DMs.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every stored policy")
    listing.add_argument("--json", action="store_true", help="one JSON array")
    listing.set_defaults(handler=_list)
    for name, handler, helptext in (("show", _show, "one policy (the default if none)"),
                                    ("remove", _remove, "delete a policy (defaults apply)")):
        one = actions.add_parser(name, help=helptext)
        _key(one)
        one.add_argument("--json", action="store_true", help="print JSON")
        one.set_defaults(handler=handler)
    setting = actions.add_parser("set", help="create or change a policy (given fields only)",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=EPILOG)
    _key(setting)
    _fields(setting)
    setting.add_argument("--json", action="store_true", help="print the result as JSON")
    setting.set_defaults(handler=_set)


def _key(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("platform", choices=["slack", "teams"])
    parser.add_argument("channel", help="Slack channel id (C…/G…), Teams conversation or team "
                        f"id, '*' for the default, '{DIRECT_CHANNEL}' for direct messages")


def _fields(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--label", help="a name people recognise, e.g. '#ask-hr'")
    add("--sources", type=_csv, metavar="A,B",
        help="source names (and tag:X, type:Y) that answer here; '' for all")
    add("--respond", choices=[r.value for r in Respond],
        help="mention: only when @mentioned; questions: every question, unmentioned too")
    add("--only-when-confident", type=_switch, metavar="on|off",
        help="auto-answer channels: stay silent when nothing answers the question")
    add("--escalate-to", type=_csv, metavar="IDS",
        help="user or user-group ids to call on 'Still need help?' and on a thumbs down")
    add("--private-answers", type=_switch, metavar="on|off",
        help="Slack: answers only the asker sees, with a 'Share to channel' button")
    add("--follow-ups", type=_switch, metavar="on|off",
        help="thread replies without a mention count as follow-up questions")
    add("--enabled", type=_switch, metavar="on|off", help="off: Sift stays out of the channel")
    add("--audience", type=_csv, metavar="GROUPS",
        help="access groups every member of the channel may see (see Permissions)")
    add("--experts", type=_csv, metavar="IDS",
        help="user ids whose replies, once captured here, are approved as answers without "
        "review (docs/answers-loop.md)")
    add("--holdout", type=float, metavar="SHARE",
        help="help channels: the share of questions (e.g. 0.05) Sift stays silent on, to "
        "measure resolution with and without it (sift report)")


def _app(args: argparse.Namespace) -> App:
    from bot.app import App, load_settings

    app = App(load_settings(args.config))
    app.database.upgrade()
    return app


def _current(app: App, platform: str, channel: str) -> ChannelPolicy | None:
    found = app.channel_policies.get(platform, channel)
    return None if found is None else policy_from(found.platform, found.channel, found.label,
                                                   found.settings)


def _as_dict(policy: ChannelPolicy, stored: bool) -> dict[str, Any]:
    return {"platform": policy.platform, "channel": policy.channel, "label": policy.label,
            **policy_settings(policy), "stored": stored}


def _print(policy: ChannelPolicy, stored: bool, as_json: bool) -> None:
    values = _as_dict(policy, stored)
    if as_json:
        print(json.dumps(values))
        return
    print(f"{policy.platform} {policy.channel}" + (f" ({policy.label})" if policy.label else "")
          + ("" if stored else "  [built-in default]"))
    for key, value in values.items():
        if key not in ("platform", "channel", "label", "stored"):
            shown = ", ".join(value) if isinstance(value, list) else value
            print(f"  {key:20} {shown if shown not in ('', []) else '-'}")


def _list(args: argparse.Namespace) -> int:
    app = _app(args)
    policies = [policy_from(p.platform, p.channel, p.label, p.settings)
                for p in app.channel_policies.all()]
    if args.json:
        print(json.dumps([_as_dict(p, True) for p in policies]))
    elif not policies:
        print("No channel policies yet: every channel answers @mentions from every source. "
              "See `sift channels set --help`.")
    for policy in policies if not args.json else []:
        _print(policy, True, False)
    return 0


def _check_channel(args: argparse.Namespace) -> None:
    from bot import surfaces  # the surfaces' specs bring aiohttp and pydantic: not for --help

    check_channel(args.platform, args.channel, surfaces.policy_platforms())


def _show(args: argparse.Namespace) -> int:
    _check_channel(args)
    app = _app(args)
    policy = _current(app, args.platform, args.channel)
    _print(policy or ChannelPolicy(args.platform, args.channel), policy is not None, args.json)
    return 0


def _set(args: argparse.Namespace) -> int:
    _check_channel(args)
    app = _app(args)
    base = _current(app, args.platform, args.channel) or ChannelPolicy(args.platform,
                                                                       args.channel)
    changes = {name: value for name, value in vars(args).items()
               if name in ChannelPolicy.__dataclass_fields__ and value is not None
               and name not in ("platform", "channel")}
    if "respond" in changes:
        changes["respond"] = Respond(changes["respond"])
    policy = validate(replace(base, **changes), app.known_names())
    before = app.channel_policies.get(policy.platform, policy.channel)
    app.channel_policies.put(policy.platform, policy.channel, policy.label,
                             policy_settings(policy))
    app.audit.record(cli_actor(), "policy_saved", f"{policy.platform}:{policy.channel}",
                     before=None if before is None else {"label": before.label,
                                                         **before.settings},
                     after={"label": policy.label, **policy_settings(policy)})
    _print(policy, True, args.json)
    return 0


def _remove(args: argparse.Namespace) -> int:
    _check_channel(args)
    app = _app(args)
    before = app.channel_policies.get(args.platform, args.channel)
    removed = app.channel_policies.remove(args.platform, args.channel)
    if before is not None:
        app.audit.record(cli_actor(), "policy_removed", f"{args.platform}:{args.channel}",
                         before={"label": before.label, **before.settings})
    print(f"Removed the policy of {args.platform} {args.channel}." if removed else
          f"{args.platform} {args.channel} had no policy; nothing removed.")
    return 0
