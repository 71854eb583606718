"""Slack payloads to small typed values; the cheap "is this reply for the bot?" check."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.chat.addressing import reads_like_question
from bot.chat.files import Attached
from bot.chat.message import ChatMessage, Kind, Thread
from bot.slack.render import FEEDBACK_ACTION, VOTE_DOWN, VOTE_UP
from bot.slack.spec import PLATFORM as SLACK_PLATFORM
from rag.types import Turn

Payload = Mapping[str, Any]  # Slack's JSON as bolt hands it over; read only in this module

UP_REACTIONS = frozenset({"+1", "thumbsup", "white_check_mark"})
ACCEPT_REACTION = "white_check_mark"  # the asker's ✅ on a person's reply: take it as the answer
SAVE_SHORTCUT = "save_to_sift"  # the "Save to Sift" message shortcut's callback_id
ASK_SHORTCUT = "ask_sift"  # the "Ask Sift about this" message shortcut's callback_id
FILE_SHARE = "file_share"  # the subtype of a message that shares files
DOWN_REACTIONS = frozenset({"-1", "thumbsdown"})
_MENTION = re.compile(r"<@(?P<id>[A-Z0-9]+)(?:\|[^>]*)?>")
_BROADCAST = re.compile(r"<!(?:here|channel|everyone|subteam\^)[^>]*>")
_LINK = re.compile(r"<(?:[^>|]*\|)?(?P<label>[^>]*)>")
@dataclass(frozen=True)
class Me:
    """The bot's identity in the workspace, from auth.test (bolt's context)."""

    user_id: str
    bot_id: str = ""


@dataclass(frozen=True)
class SlackFile:
    """A file shared in the message (its `files`), as Slack's file object describes it."""

    name: str
    mimetype: str
    size: int
    url: str  # url_private_download: read with the bot token (files:read)


@dataclass(frozen=True)
class Incoming:
    """A message that may be a question for Sift."""

    kind: Kind
    event_id: str
    team: str
    channel: str
    user: str
    text: str  # the bot's own mention removed
    ts: str
    thread_ts: str = ""  # the thread it sits in; "" at top level
    files: tuple[SlackFile, ...] = ()  # the sender's own files on this message
    whole_thread: bool = False  # "Ask Sift about this": the thread around it, not only before

    def answer_thread(self, *, threaded: bool) -> str:
        """Where the answer goes: channels always answer in a thread, DMs only when asked to."""
        if self.kind is Kind.DIRECT and not threaded:
            return self.thread_ts
        return self.thread_ts or self.ts

    def to_message(self, me: Me, *, threaded: bool,
                   files: tuple[Attached, ...] = ()) -> ChatMessage:
        """The chat core's view. A DM's top level keeps its history in Sift's store; threads
        carry theirs on Slack."""
        remembered = self.kind is Kind.DIRECT and not self.thread_ts
        return ChatMessage(
            SLACK_PLATFORM, self.kind, f"slack:{self.event_id}", self.team, self.channel,
            self.thread_ts, self.user, self.text, ts=self.ts,
            reply_thread=self.answer_thread(threaded=threaded),
            conversation=f"slack:{self.team}:{self.channel}" if remembered else "",
            mentions_others=mentions_others(self.text, me), files=files)


@dataclass(frozen=True)
class Reaction:
    event_id: str
    user: str
    channel: str
    message_ts: str
    vote: int
    added: bool


@dataclass(frozen=True)
class FeedbackClick:
    user: str
    channel: str
    message_ts: str
    thread_ts: str
    vote: int


@dataclass(frozen=True)
class ThreadMessage:
    ts: str
    user: str
    bot_id: str
    text: str


def strip_mentions(text: str, me: Me) -> str:
    return " ".join(re.sub(rf"<@{re.escape(me.user_id)}(?:\|[^>]*)?>", " ", text).split())


def plain(text: str) -> str:
    """mrkdwn to plain text for history: links become their labels, entities characters."""
    return html.unescape(_LINK.sub(lambda m: m["label"], text)).strip()


def _s(payload: Payload, key: str) -> str:
    """A string field; missing or null (or, defensively, any other type) reads as ""."""
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _envelope(body: Payload) -> tuple[Payload, str]:
    return body.get("event") or {}, _s(body, "event_id")


def parse_mention(body: Payload, me: Me) -> Incoming | None:
    event, event_id = _envelope(body)
    channel, user = _s(event, "channel"), _s(event, "user")
    if event.get("bot_id") or not user or user == me.user_id or channel.startswith("D"):
        return None  # other bots, ourselves; mentions in DMs arrive as message.im
    return Incoming(Kind.MENTION, event_id, _s(body, "team_id"), channel, user,
                    strip_mentions(_s(event, "text"), me), _s(event, "ts"),
                    _s(event, "thread_ts"), files_of(event, user))


def parse_message(body: Payload, me: Me) -> Incoming | None:
    """A DM, or a thread reply that does not mention the bot; None for everything else."""
    event, event_id = _envelope(body)
    user, text = _s(event, "user"), _s(event, "text")
    if event.get("subtype") not in (None, FILE_SHARE) or event.get("bot_id") or not user or \
            user == me.user_id:
        return None  # edits, joins, bot messages, our own messages
    ts, thread_ts = _s(event, "ts"), _s(event, "thread_ts")
    team, channel = _s(body, "team_id"), _s(event, "channel")
    if event.get("channel_type") == "im":
        return Incoming(Kind.DIRECT, event_id, team, channel, user, strip_mentions(text, me),
                        ts, thread_ts, files_of(event, user))
    if f"<@{me.user_id}" in text or (thread_ts and thread_ts == ts):
        return None  # a mention (app_mention answers it), or a thread's parent
    kind = Kind.THREAD_REPLY if thread_ts else Kind.CHANNEL  # CHANNEL: auto-answer may take it
    return Incoming(kind, event_id, team, channel, user, text, ts, thread_ts,
                    files_of(event, user))


def files_of(event: Payload, sender: str) -> tuple[SlackFile, ...]:
    """The message's own files that its sender shared: a file object naming someone else
    (a share of another person's file) is not the asker's to have read."""
    found = []
    for raw in event.get("files") or ():
        if not isinstance(raw, dict) or _s(raw, "user") != sender:
            continue
        url = _s(raw, "url_private_download") or _s(raw, "url_private")
        size = raw.get("size")
        if url:
            found.append(SlackFile(_s(raw, "name") or _s(raw, "title") or "file",
                                   _s(raw, "mimetype"), size if isinstance(size, int) else 0,
                                   url))
    return tuple(found)


def _vote_for(reaction: str) -> int:
    name = reaction.split("::", 1)[0]  # "+1::skin-tone-3"
    return 1 if name in UP_REACTIONS else -1 if name in DOWN_REACTIONS else 0


def parse_reaction(body: Payload, me: Me, *, added: bool) -> Reaction | None:
    event, event_id = _envelope(body)
    item = event.get("item") or {}
    vote = _vote_for(_s(event, "reaction"))
    user = _s(event, "user")
    if item.get("type") != "message" or not vote or not user or user == me.user_id:
        return None
    return Reaction(event_id, user, _s(item, "channel"), _s(item, "ts"), vote, added)


def parse_feedback(body: Payload) -> FeedbackClick | None:
    actions = body.get("actions") or []
    action = actions[0] if actions and isinstance(actions[0], dict) else {}
    votes = {VOTE_UP: 1, VOTE_DOWN: -1}
    if action.get("action_id") != FEEDBACK_ACTION or action.get("value") not in votes:
        return None
    container, message = body.get("container") or {}, body.get("message") or {}
    channel = _s(container, "channel_id") or _s(body.get("channel") or {}, "id")
    return FeedbackClick(
        _s(body.get("user") or {}, "id"), channel,
        _s(container, "message_ts") or _s(message, "ts"),
        _s(container, "thread_ts") or _s(message, "thread_ts"), votes[action["value"]])


def mentions_others(text: str, me: Me) -> bool:
    """It @mentions someone other than the bot, or broadcasts: a message among people."""
    return bool(_BROADCAST.search(text)) or any(m["id"] != me.user_id
                                                for m in _MENTION.finditer(text))


@dataclass(frozen=True)
class ButtonClick:
    """A click on one of Sift's own buttons (share, help)."""

    user: str
    channel: str
    message_ts: str
    thread_ts: str
    value: str


def parse_button(body: Payload) -> ButtonClick | None:
    actions = body.get("actions") or []
    action = actions[0] if actions and isinstance(actions[0], dict) else {}
    container, message = body.get("container") or {}, body.get("message") or {}
    channel = _s(container, "channel_id") or _s(body.get("channel") or {}, "id")
    user = _s(body.get("user") or {}, "id")
    if not channel or not user:
        return None
    return ButtonClick(user, channel, _s(container, "message_ts") or _s(message, "ts"),
                       _s(container, "thread_ts") or _s(message, "thread_ts"),
                       _s(action, "value"))


def parse_command(body: Payload) -> Incoming | None:
    """/sift <question> (a slash command's form fields); the answer is private."""
    channel, user = _s(body, "channel_id"), _s(body, "user_id")
    if not channel or not user:
        return None
    # Slash commands carry no event id; the trigger id is unique per invocation.
    return Incoming(Kind.COMMAND, f"cmd-{_s(body, 'trigger_id')}", _s(body, "team_id"),
                    channel, user, " ".join(_s(body, "text").split()), "", "")


def parse_ask_shortcut(body: Payload, me: Me) -> Incoming | None:
    """"Ask Sift about this" on a message (type message_action): a private question, as a
    /sift one is, whose text is that message's and whose history is its thread."""
    action = _message_action(body, ASK_SHORTCUT)
    if action is None:
        return None
    text = plain(strip_mentions(_s(action.message, "text"), me))
    return Incoming(Kind.COMMAND, f"ask-{_s(body, 'trigger_id')}", action.team,
                    action.channel, action.user, text, action.ts,
                    _s(action.message, "thread_ts") or action.ts, whole_thread=True)


@dataclass(frozen=True)
class _MessageAction:
    """Who used a message shortcut, where, and on which message."""

    user: str
    channel: str
    team: str
    ts: str
    message: Mapping[str, Any]


def _message_action(body: Payload, callback_id: str) -> _MessageAction | None:
    """A message shortcut's payload (type message_action) with that callback id."""
    if _s(body, "type") != "message_action" or _s(body, "callback_id") != callback_id:
        return None
    user, channel = body.get("user") or {}, body.get("channel") or {}
    message = body.get("message") or {}
    ts = _s(message, "ts") or _s(body, "message_ts")
    if not _s(user, "id") or not _s(channel, "id") or not ts:
        return None
    return _MessageAction(_s(user, "id"), _s(channel, "id"), _s(body.get("team") or {}, "id"),
                          ts, message)


def looks_addressed(text: str, me: Me) -> bool:
    """Cheap, before any API call: a reply is for the bot when it mentions nobody else and
    reads like a question or a request."""
    return not mentions_others(text, me) and reads_like_question(plain(strip_mentions(text, me)))


def thread_view(thread: Iterable[ThreadMessage], before_ts: str, me: Me, keep: int, *,
                around: bool = False) -> Thread:
    """`around`: every other message of the thread, later replies too (the message asked
    about may be the thread's first)."""
    listed = list(thread)
    if around:
        others = [m for m in listed if m.ts != before_ts]
        return Thread(answered_by_me(listed, me), thread_turns(others, _LAST_TS, me, keep))
    return Thread(answered_by_me(listed, me), thread_turns(listed, before_ts, me, keep))


def thread_messages(raw: Iterable[Payload]) -> list[ThreadMessage]:
    return [ThreadMessage(_s(m, "ts"), _s(m, "user"), _s(m, "bot_id"),
                          _s(m, "text")) for m in raw]


_LAST_TS = "9999999999.999999"


def _ts_key(ts: str) -> tuple[int, int]:
    seconds, _, micros = ts.partition(".")
    return int(seconds or 0), int(micros.ljust(6, "0")[:6])


def _from_me(message: ThreadMessage, me: Me) -> bool:
    return message.user == me.user_id or bool(me.bot_id and message.bot_id == me.bot_id)


def answered_by_me(thread: Iterable[ThreadMessage], me: Me) -> bool:
    return any(_from_me(m, me) for m in thread)


def thread_turns(thread: Iterable[ThreadMessage], before_ts: str, me: Me,
                 keep: int) -> tuple[Turn, ...]:
    """The thread's earlier messages as conversation turns; other bots are left out."""
    turns = []
    for m in sorted(thread, key=lambda m: _ts_key(m.ts)):
        if _ts_key(m.ts) >= _ts_key(before_ts):
            break
        if _from_me(m, me):
            turns.append(Turn("assistant", plain(m.text)))
        elif not m.bot_id and m.user:
            turns.append(Turn("user", plain(strip_mentions(m.text, me))))
    turns = [t for t in turns if t.text]
    return tuple(turns[-keep:]) if keep else ()


@dataclass(frozen=True)
class Picked:
    """A reply someone picked as an answer: a ✅ reaction, or the "Save to Sift" shortcut."""

    key: str  # the event id (reactions) or trigger id (shortcuts)
    team: str
    user: str
    channel: str
    message_ts: str


def parse_accept(body: Payload, me: Me) -> Picked | None:
    """A ✅ added to a message (whose, the capture flow decides)."""
    event, event_id = _envelope(body)
    item = event.get("item") or {}
    user = _s(event, "user")
    if _s(event, "reaction").split("::", 1)[0] != ACCEPT_REACTION or \
            item.get("type") != "message" or not user or user == me.user_id or \
            _s(event, "item_user") == me.user_id:
        return None  # a ✅ on Sift's own answer is a 👍, and costs no thread read
    return Picked(event_id, _s(body, "team_id"), user, _s(item, "channel"), _s(item, "ts"))


def parse_shortcut(body: Payload) -> Picked | None:
    """A message shortcut's payload (type message_action) for "Save to Sift"."""
    action = _message_action(body, SAVE_SHORTCUT)
    if action is None:
        return None
    return Picked(_s(body, "trigger_id"), action.team, action.user, action.channel, action.ts)
