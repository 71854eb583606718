"""The Slack channels connector: a thread (or a long message) of a channel is one document."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime

from pydantic import Field

from rag.errors import ConfigError, SyncError
from sync.connectors.base import (
    ConnectorSettings,
    ConnectorSpec,
    DocumentFailure,
    DocumentGone,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.common.slack_client import web_client
from sync.connectors.slack_api import (
    Channel,
    ChannelUnreadable,
    Client,
    Me,
    Message,
    SlackApi,
)
from sync.connectors.slack_pace import TierPacer
from sync.connectors.slack_text import channel_ids, first_line, to_markdown, user_ids

# Subtypes that carry what people said; joins, topic changes, pins and the like do not.
SPOKEN = frozenset({"", "thread_broadcast", "file_share", "me_message", "bot_message"})
PRIVATE_PREFIX = "slack:channel:"  # a private channel's readers: its current members


class SlackSettings(ConnectorSettings):
    """The `[sources.slack]` table."""

    # Channel ids ("C0123ABCD") or names ("#it-help"). Empty: every public channel Sift is a
    # member of. Private channels only when listed; direct messages never.
    channels: list[str] = Field(default_factory=list)
    bots: list[str] = Field(default_factory=list)  # other bots (B… or A… ids) to index
    min_chars: int = Field(200, ge=0)  # a message without replies shorter than this is noise
    lookback_days: float = Field(30.0, gt=0)  # incremental: older threads' replies wait
    retries: int = Field(3, ge=0)  # per request, on 429 (after Retry-After) and 5xx
    # Keep to each method's rate tier (a tier's burst, then its pace); off only for a
    # workspace whose limits Slack raised.
    paced: bool = True


def _when(ts: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(ts), UTC)
    except ValueError:
        return None


class SlackConnector:
    """Channel history through conversations.history; a thread's replies through
    conversations.replies when it is new or its latest_reply is. Deleted messages leave at
    the full pass (listing every id costs the whole history)."""

    cheap_ids = False

    def __init__(self, source: SourceConfig, settings: SlackSettings,
                 client: Callable[[], Client] | None = None) -> None:
        self.source = source
        self.settings = settings
        self._client = client or (lambda: web_client(source.token or "", source.url,
                                                     retries=settings.retries))
        self.label = f"Source '{source.name}' (Slack)"

    def _api(self) -> SlackApi:
        return SlackApi(self._client(), self.label,
                        TierPacer() if self.settings.paced else None)

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        api = self._api()
        me = await api.me()
        channels, failures = await self._channels(api)
        for failure in failures:
            yield failure
        names = {c.id: c.name for c in channels}
        for channel in channels:
            try:
                async for item in self._channel(api, me, channel, names, since):
                    yield item
            except ChannelUnreadable as exc:
                yield self._unreadable(f"#{channel.name}", channel.id, exc)

    async def list_ids(self) -> set[str]:
        api = self._api()
        me = await api.me()
        channels, _ = await self._channels(api)
        ids: set[str] = set()
        for channel in channels:
            try:
                ids |= {self._doc_id(channel, m) async for m in api.history(channel.id)
                        if m.reply_count or self._stands_alone(me, m)}
            except ChannelUnreadable:
                continue  # reported by the listing; its documents leave with it
        return ids

    # --- channels --------------------------------------------------------------------------

    async def _channels(self, api: SlackApi) -> tuple[list[Channel], list[DocumentFailure]]:
        """The channels to read, and a failure per listed one that cannot be read."""
        if not self.settings.channels:
            listed = await api.channels("public_channel")
            return [c for c in listed if c.member], []
        found: list[Channel] = []
        failures: list[DocumentFailure] = []
        by_name: dict[str, Channel] | None = None
        for ref in dict.fromkeys(self.settings.channels):
            name = ref.strip().lstrip("#")
            try:
                if ref.strip().startswith("#"):
                    if by_name is None:
                        by_name = {c.name: c for c in await api.channels(
                            "public_channel,private_channel")}
                    channel = by_name.get(name)
                    if channel is None:
                        raise ChannelUnreadable(f"no channel named {name}", user_message=(
                            "Slack has no channel of that name that Sift can see: check the "
                            "spelling, or invite the bot if it is private"))
                else:
                    channel = await api.channel(name)
            except ChannelUnreadable as exc:
                failures.append(self._unreadable(ref, name, exc))
                continue
            if channel.direct:
                failures.append(DocumentFailure(f"channel:{ref}", f"{self.label}: {ref} is a "
                                                "direct message; those are never indexed"))
            elif not channel.member:
                failures.append(self._unreadable(ref, channel.id, ChannelUnreadable(
                    "not a member", user_message="Sift is not a member of it: invite the "
                    "bot there (/invite @Sift)")))
            else:
                found.append(channel)
        return found, failures

    def _unreadable(self, ref: str, channel_id: str, exc: ChannelUnreadable) -> DocumentFailure:
        where = ref if ref.lstrip("#") == channel_id else f"{ref} ({channel_id})"
        return DocumentFailure(f"channel:{ref}", f"{self.label}: channel {where} cannot be "
                                                 f"read: {exc.user_message}")

    # --- documents -------------------------------------------------------------------------

    async def _channel(self, api: SlackApi, me: Me, channel: Channel, names: dict[str, str],
                       since: datetime | None) -> AsyncIterator[Fetched]:
        cut = since.timestamp() if since is not None else None
        oldest = "" if cut is None else f"{cut - self.settings.lookback_days * 86400:.6f}"
        async for root in api.history(channel.id, oldest):
            if cut is not None and not self._changed(root, cut):
                continue
            thread = await api.replies(channel.id, root.ts) if root.reply_count else [root]
            doc = await self._thread(api, me, channel, names, root, thread)
            if doc is not None:
                yield doc

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        """Threads by id (`<channel>:<root ts>`), as message events at /slack/events name
        them: edited, answered or deleted. Ids of channels this source does not read are
        passed over; a thread Slack no longer has, or that no longer qualifies, leaves."""
        api = self._api()
        me = await api.me()
        channels, _ = await self._channels(api)
        by_id = {c.id: c for c in channels}
        names = {c.id: c.name for c in channels}
        for doc_id in doc_ids:
            channel_id, _, ts = doc_id.partition(":")
            channel = by_id.get(channel_id)
            if channel is None or not ts:
                continue
            try:
                thread = await api.replies(channel.id, ts)
            except ChannelUnreadable as exc:
                yield self._unreadable(f"#{channel.name}", channel.id, exc)
                continue
            except SyncError as exc:
                if "thread_not_found" in str(exc) or "message_not_found" in str(exc):
                    yield DocumentGone(doc_id)
                    continue
                raise
            root = thread[0] if thread and thread[0].ts == ts else None
            doc = None if root is None else await self._thread(api, me, channel, names, root,
                                                                thread)
            yield doc if doc is not None else DocumentGone(doc_id)

    async def _thread(self, api: SlackApi, me: Me, channel: Channel, names: dict[str, str],
                      root: Message, thread: list[Message]) -> SourceDocument | None:
        """The thread's document, or None when nothing in it is worth indexing."""
        spoken = [m for m in thread if self._wanted(me, m)]
        if not spoken or (len(spoken) == 1 and not self._stands_alone(me, spoken[0])):
            return None
        return await self._document(api, me, channel, names, root, spoken)

    @staticmethod
    def _changed(root: Message, cut: float) -> bool:
        return any(ts and float(ts) >= cut
                   for ts in (root.ts, root.latest_reply, root.edited_ts))

    def _wanted(self, me: Me, m: Message) -> bool:
        """Never Sift's own words; other bots only when listed; no joins or topic changes."""
        if m.subtype not in SPOKEN:
            return False
        if (m.bot_id and m.bot_id == me.bot_id) or (m.app_id and m.app_id == me.app_id) or (
                m.user and m.user == me.user_id):
            return False
        if m.bot_id or m.subtype == "bot_message":
            return bool({m.bot_id, m.app_id} & set(self.settings.bots))
        return True

    def _stands_alone(self, me: Me, m: Message) -> bool:
        return self._wanted(me, m) and len(m.text) + sum(map(len, m.extra)) >= (
            self.settings.min_chars)

    @staticmethod
    def _doc_id(channel: Channel, root: Message) -> str:
        return f"{channel.id}:{root.ts}"

    async def _document(self, api: SlackApi, me: Me, channel: Channel, names: dict[str, str],
                        root: Message, spoken: list[Message]) -> SourceDocument:
        people = {m.user for m in spoken if m.user}
        for m in spoken:
            people |= user_ids(m.text)
            for cid in channel_ids(m.text) - names.keys():
                names[cid] = await self._channel_name(api, cid)
        users = {u: await api.user_name(u) for u in sorted(people)}
        parts, authors = [], []
        for m in spoken:
            author = users.get(m.user) or m.user or "a bot"
            authors.append(author)
            when = _when(m.ts)
            stamp = f" ({when:%Y-%m-%d %H:%M} UTC)" if when else ""
            text = to_markdown(m.text or "\n".join(m.extra), users, names)
            files = "".join(f"\n[file: {f}]" for f in m.files)
            parts.append(f"**{author}**{stamp}:\n{text}{files}")
        first = to_markdown(spoken[0].text or "\n".join(spoken[0].extra), users, names)
        latest = max(float(t) for m in spoken for t in (m.ts, m.edited_ts) if t)
        tag = f"#{channel.name}"
        # Cited as a conversation: "How do I …? (#it-help thread, 12 Mar 2026)".
        started = _when(root.ts)
        where = f"{tag} thread" if len(spoken) > 1 else tag
        label = f"{where}, {started.day} {started:%b %Y}" if started else where
        return SourceDocument(
            doc_id=self._doc_id(channel, root),
            title=f"{first_line(first) or 'A message'} ({label})", body="\n\n".join(parts),
            url=f"{me.workspace_url}archives/{channel.id}/p{root.ts.replace('.', '')}",
            tags=(tag,), authors=tuple(dict.fromkeys(authors)), channels=(tag,),
            doc_type="slack-thread" if len(spoken) > 1 else "slack-message",
            subtype=channel.name, published_at=_when(root.ts),
            updated_at=datetime.fromtimestamp(latest, UTC),
            access=(f"{PRIVATE_PREFIX}{channel.id}",) if channel.private else ("public",))

    @staticmethod
    async def _channel_name(api: SlackApi, channel_id: str) -> str:
        try:
            return (await api.channel(channel_id)).name
        except SyncError:  # a channel Sift cannot see: its id, as Slack would show
            return channel_id


def build(source: SourceConfig, settings: SlackSettings) -> SlackConnector:
    if not source.token:
        raise ConfigError(f"source {source.name} has no token", user_message=(
            f"Source '{source.name}' is slack but has no `token` and SIFT_SLACK_BOT_TOKEN "
            "is not set (the bot token, xoxb-…)."))
    return SlackConnector(source, settings)


SPEC = ConnectorSpec("slack", SlackSettings, build, "Slack channel threads and messages")
