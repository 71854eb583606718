"""A Teams thread as one document: its messages in order, a conversation's title, its readers."""

from __future__ import annotations

from datetime import datetime

from sync.connectors.base import SourceDocument
from sync.connectors.common.convert import DocumentParseError, as_datetime
from sync.connectors.slack_text import first_line
from sync.connectors.teams_api import Channel, Message

TEAM_PREFIX = "teams:team:"  # a standard channel's readers: the team's members
CHANNEL_PREFIX = "teams:channel:"  # a private or shared channel's readers: its members


def access_of(channel: Channel) -> tuple[str, ...]:
    """A standard channel is read by its team; a private or shared one by its own members."""
    if channel.standard:
        return (f"{TEAM_PREFIX}{channel.team.id}",)
    return (f"{CHANNEL_PREFIX}{channel.id}",)


def _when(value: str) -> datetime | None:
    try:
        return as_datetime(value) if value else None
    except DocumentParseError:
        return None


def thread_document(channel: Channel, root: Message, spoken: list[tuple[Message, str]]
                    ) -> SourceDocument:
    """`spoken`: the messages worth indexing, root first, each with its Markdown. Cited as a
    conversation: "How do I …? (#it-help thread in IT, 12 Mar 2026)"."""
    parts, authors = [], []
    for m, text in spoken:
        author = m.author or "an app"
        authors.append(author)
        when = _when(m.created)
        stamp = f" ({when:%Y-%m-%d %H:%M} UTC)" if when else ""
        parts.append(f"**{author}**{stamp}:\n{text}")
    tag = f"#{channel.name}"
    started = _when(root.created)
    where = f"{tag} thread" if len(spoken) > 1 else tag
    label = f"{where} in {channel.team.name}"
    label += f", {started.day} {started:%b %Y}" if started else ""
    updated = [w for m, _ in spoken if (w := _when(m.modified) or _when(m.created))]
    return SourceDocument(
        doc_id=f"{channel.id}/{root.id}",
        title=f"{first_line(spoken[0][1]) or 'A message'} ({label})",
        body="\n\n".join(parts), url=root.url, tags=(tag, channel.team.name),
        authors=tuple(dict.fromkeys(authors)), channels=(tag,),
        doc_type="teams-thread" if len(spoken) > 1 else "teams-message",
        subtype=channel.name, published_at=started,
        updated_at=max(updated) if updated else None, access=access_of(channel))
