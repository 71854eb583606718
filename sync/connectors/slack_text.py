"""Slack message text as Markdown: mentions as names, links as links, code kept as written."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping

# Slack's escapes: <@U123>, <@U123|name>, <#C123|name>, <!here>, <!subteam^S1|@team>,
# <!date^1392734382^{date}|fallback>, <https://x|label>, <mailto:a@b|a@b>.
ANGLE = re.compile(r"<([^<>\s][^<>]*)>")
USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


def user_ids(text: str) -> set[str]:
    """The people a text mentions (their ids), to look their names up first."""
    return set(USER.findall(text))


def channel_ids(text: str) -> set[str]:
    return {m.group(1)[1:] for m in ANGLE.finditer(text)
            if m.group(1).startswith("#") and "|" not in m.group(1)}


def to_markdown(text: str, users: Mapping[str, str], channels: Mapping[str, str]) -> str:
    """`text` with every Slack escape rendered; `users` and `channels` map ids to names."""

    def one(match: re.Match[str]) -> str:
        inner = match.group(1)
        target, _, label = inner.partition("|")
        if target.startswith("@"):
            return "@" + users.get(target[1:], label or target[1:])
        if target.startswith("#"):
            return "#" + (label or channels.get(target[1:], target[1:]))
        if target.startswith("!"):
            command = target[1:]
            if command.startswith("subteam^"):
                return label or "@group"
            if command.startswith("date^"):
                return label
            return "@" + command  # here, channel, everyone
        if target.startswith("mailto:"):
            return label or target[len("mailto:"):]
        return f"[{label}]({target})" if label and label != target else target

    return html.unescape(ANGLE.sub(one, text))


def first_line(text: str, limit: int = 120) -> str:
    """A title: the first line with words, without Markdown emphasis, cut at a word."""
    for line in text.splitlines():
        line = re.sub(r"[*_~`>#]+", "", line).strip()
        if line:
            if len(line) <= limit:
                return line
            return line[:limit].rsplit(" ", 1)[0] + "…"
    return ""
