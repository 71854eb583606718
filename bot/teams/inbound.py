"""Teams activities in, typed values out: the question asked, a feedback submission, a reaction."""

from __future__ import annotations

import enum
import html
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bs4 import BeautifulSoup
from microsoft_agents.activity import Activity

from bot.chat.files import Attached
from bot.chat.message import ChatMessage, Kind
from bot.teams.spec import PLATFORM as TEAMS_PLATFORM
from rag.types import AskContext

THREAD_MARK = ";messageid="
_AT = re.compile(r"<at\b[^>]*>(.*?)</at>", re.IGNORECASE | re.DOTALL)
_BLANKS = re.compile(r"[ \t\u00a0]+")
REACTION_VOTES: Mapping[str, int] = {"like": 1}  # Teams' 👍; other reactions are not votes
FEEDBACK_VOTES: Mapping[str, int] = {"like": 1, "dislike": -1}


class ConversationKind(enum.StrEnum):
    PERSONAL = "personal"
    GROUP_CHAT = "groupChat"
    CHANNEL = "channel"


@dataclass(frozen=True)
class TeamsConversation:
    """A conversation as Teams names it; in a channel the id carries the thread's root message."""

    id: str
    kind: ConversationKind
    tenant: str = ""

    @property
    def base(self) -> str:
        """The chat or channel without the thread: what message ids are unique within."""
        return self.id.split(THREAD_MARK, 1)[0]

    @property
    def thread(self) -> str:
        return self.id.split(THREAD_MARK, 1)[1] if THREAD_MARK in self.id else ""

    @property
    def history_key(self) -> str:
        """Follow-ups belong to a personal chat, a group chat, or one channel thread."""
        return f"teams:{self.id}"


FILE_INFO = "application/vnd.microsoft.teams.file.download.info"


@dataclass(frozen=True)
class TeamsFile:
    """An attachment of the message: an inline image (read through the Bot Connector with the
    bot's token) or a file shared in it (its pre-authorised downloadUrl, no token)."""

    name: str
    media_type: str
    url: str
    with_token: bool


def files_of(activity: Activity) -> tuple[TeamsFile, ...]:
    """The activity's own attachments that are files; its HTML copy and cards are not."""
    found = []
    for n, a in enumerate(activity.attachments or ()):
        kind = (a.content_type or "").lower()
        if kind.startswith("image/") and a.content_url:
            found.append(TeamsFile(a.name or f"image-{n + 1}", kind, a.content_url, True))
        elif kind == FILE_INFO and isinstance(a.content, Mapping):
            url, file_type = a.content.get("downloadUrl"), a.content.get("fileType")
            if isinstance(url, str) and url:
                name = a.name or f"file.{file_type or 'bin'}"
                found.append(TeamsFile(name, "", url, False))
    return tuple(found)


@dataclass(frozen=True)
class IncomingMessage:
    activity_id: str
    conversation: TeamsConversation
    user: str
    text: str

    team: str = ""  # the team a channel belongs to
    mentioned: bool = True  # @Sift (personal chats count as addressed)
    mentions_others: bool = False  # it @mentions people: a message among people
    files: tuple[TeamsFile, ...] = ()

    @property
    def dedupe_key(self) -> str:
        return f"teams:{self.conversation.base}:{self.activity_id}"

    @property
    def personal(self) -> bool:
        return self.conversation.kind is ConversationKind.PERSONAL

    @property
    def kind(self) -> Kind:
        """Unmentioned posts reach Sift only with the RSC permissions of the app package;
        a channel policy with `respond = "questions"` decides whether they are answered."""
        if self.personal:
            return Kind.DIRECT
        if self.mentioned:
            return Kind.MENTION
        thread = self.conversation.thread
        return Kind.THREAD_REPLY if thread and thread != self.activity_id else Kind.CHANNEL

    def to_message(self, files: tuple[Attached, ...] = ()) -> ChatMessage:
        c = self.conversation
        return ChatMessage(
            TEAMS_PLATFORM, self.kind, self.dedupe_key,
            c.tenant, c.base, c.thread, self.user, self.text, ts=self.activity_id,
            reply_thread=c.thread, conversation=c.history_key, team=self.team,
            mentions_others=self.mentions_others, files=files)

    def ask_context(self) -> AskContext:
        c = self.conversation
        return AskContext(platform=TEAMS_PLATFORM, workspace=c.tenant, channel=c.base,
                          thread=c.thread, user=self.user)


@dataclass(frozen=True)
class FeedbackSubmission:
    """Teams' feedback loop: thumbs up or down on `target_id`, with an optional comment."""

    conversation: TeamsConversation
    user: str
    target_id: str
    vote: int
    comment: str | None = None


@dataclass(frozen=True)
class ReactionChange:
    """A reaction added (`vote`) or removed (`retract`, with the vote it had cast) on the
    message `target_id`."""

    conversation: TeamsConversation
    user: str
    target_id: str
    vote: int | None = None
    retract: bool = False


def question_text(text: str, bot_mentions: Sequence[str]) -> str:
    """The question without the bot's @mention; other people's mentions become their names."""
    for mention in bot_mentions:
        text = text.replace(mention, " ")
    text = html.unescape(_AT.sub(r"\1", text))
    return "\n".join(_BLANKS.sub(" ", line).strip() for line in text.splitlines()).strip()


def conversation_of(activity: Activity) -> TeamsConversation:
    conv = activity.conversation
    assert conv is not None and conv.id  # the adapter answers 400 before a turn without one
    kind = {k.value: k for k in ConversationKind}.get(conv.conversation_type or "")
    if kind is None:  # Emulator and Web Chat: 1:1 unless marked as a group
        kind = ConversationKind.GROUP_CHAT if conv.is_group else ConversationKind.PERSONAL
    return TeamsConversation(conv.id, kind, conv.tenant_id or _channel_tenant(activity))


def _channel_tenant(activity: Activity) -> str:
    data = activity.channel_data if isinstance(activity.channel_data, Mapping) else {}
    tenant = data.get("tenant")
    return str(tenant.get("id", "")) if isinstance(tenant, Mapping) else ""


def team_of(activity: Activity) -> str:
    """The team a channel message comes from (channelData.team.id), "" elsewhere."""
    data = activity.channel_data if isinstance(activity.channel_data, Mapping) else {}
    team = data.get("team")
    return str(team.get("id", "")) if isinstance(team, Mapping) else ""


def user_of(activity: Activity) -> str:
    """The Entra object id when Teams sends it: the same person across bots and chats."""
    sender = activity.from_property
    if sender is None:
        return ""
    return sender.aad_object_id or sender.id or ""


def parse_message(activity: Activity) -> IncomingMessage | None:
    """A message that may be for Sift; the chat flow decides about posts without @Sift."""
    conversation = conversation_of(activity)
    bot_id = activity.recipient.id if activity.recipient else None
    mentions = [m for m in activity.get_mentions() if m.mentioned and m.mentioned.id == bot_id]
    sender = activity.from_property
    if sender is not None and (sender.id == bot_id or (sender.role or "") == "bot"):
        return None  # ourselves, or another bot
    texts = [m.text or f"<at>{m.mentioned.name}</at>" for m in mentions if m.mentioned]
    # Teams always sends an id; without one, nothing can be a redelivery of this message.
    return IncomingMessage(activity.id or f"no-id-{uuid.uuid4().hex}", conversation,
                           user_of(activity), question_text(activity.text or "", texts),
                           team_of(activity), mentioned=bool(mentions),
                           mentions_others=any(m.mentioned and m.mentioned.id != bot_id
                                               for m in activity.get_mentions()),
                           files=files_of(activity))


def _comment(raw: Any) -> str | None:
    """`feedback` is a JSON string holding `feedbackText`; tolerate an object or plain text."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return raw.strip() or None
    text = raw.get("feedbackText") if isinstance(raw, Mapping) else None
    return text.strip() or None if isinstance(text, str) else None


def parse_feedback(activity: Activity) -> FeedbackSubmission | None:
    """A `message/submitAction` invoke from the feedback loop, or None if it is another action."""
    value = activity.value if isinstance(activity.value, Mapping) else {}
    action = value.get("actionValue")
    if value.get("actionName") != "feedback" or not isinstance(action, Mapping):
        return None
    vote = FEEDBACK_VOTES.get(str(action.get("reaction", "")))
    if vote is None or not activity.reply_to_id:
        return None
    return FeedbackSubmission(conversation_of(activity), user_of(activity),
                              activity.reply_to_id, vote, _comment(action.get("feedback")))


def parse_reaction(activity: Activity) -> ReactionChange | None:
    """A 👍 added or removed on a message; None for other reactions."""
    if not activity.reply_to_id:
        return None
    added = {r.type for r in activity.reactions_added or []}
    removed = {r.type for r in activity.reactions_removed or []}
    votes = [REACTION_VOTES[t] for t in added if t in REACTION_VOTES]
    taken_back = [REACTION_VOTES[t] for t in removed if t in REACTION_VOTES]
    if not votes and not taken_back:
        return None
    if votes:
        return ReactionChange(conversation_of(activity), user_of(activity), activity.reply_to_id,
                              votes[0])
    # The vote the removed reaction had cast: only that one may be taken back.
    return ReactionChange(conversation_of(activity), user_of(activity), activity.reply_to_id,
                          taken_back[0], retract=True)


ACCEPT_REACTIONS = frozenset({"like"})  # the asker's 👍 on a person's reply: "this solved it"
SAVE_COMMAND = "saveToSift"  # the message action's command id (deploy/teams/manifest.json)


@dataclass(frozen=True)
class PickedReply:
    """A reply picked as an answer: the asker's 👍 under it, or someone's "Save to Sift"."""

    conversation: TeamsConversation
    team_group: str  # the team's Entra group id, what Graph names the team by ("" unknown)
    user: str  # who picked it
    message_id: str
    root: str  # the thread's first message ("" outside a channel thread)
    key: str  # the activity's id: a redelivered reaction is dropped
    team: str = ""  # the team as Teams names it (a policy may be the team's)


def group_of(activity: Activity) -> str:
    """The team's Entra group id (channelData.team.aadGroupId), "" when Teams left it out."""
    data = activity.channel_data if isinstance(activity.channel_data, Mapping) else {}
    team = data.get("team")
    return str(team.get("aadGroupId") or "") if isinstance(team, Mapping) else ""


def parse_accept(activity: Activity) -> PickedReply | None:
    """A 👍 added to a reply inside a channel thread (whose reply, and whose 👍 counts, the
    capture flow decides)."""
    conversation = conversation_of(activity)
    target, root = activity.reply_to_id or "", conversation.thread
    if conversation.kind is not ConversationKind.CHANNEL or not root or not target or \
            target == root:
        return None
    if not any(r.type in ACCEPT_REACTIONS for r in activity.reactions_added or []):
        return None
    return PickedReply(conversation, group_of(activity), user_of(activity), target, root,
                       f"teams:{conversation.base}:accept:{activity.id or target}",
                       team_of(activity))


def parse_save(activity: Activity) -> PickedReply | None:
    """The "Save to Sift" message action (composeExtension/fetchTask with its messagePayload);
    None for any other command."""
    value = activity.value if isinstance(activity.value, Mapping) else {}
    payload = value.get("messagePayload")
    if value.get("commandId") != SAVE_COMMAND or not isinstance(payload, Mapping) or \
            not payload.get("id"):
        return None
    conversation = conversation_of(activity)
    root = conversation.thread or str(payload.get("replyToId") or "")
    if conversation.kind is not ConversationKind.CHANNEL:
        root = ""  # chats have no threads to read
    return PickedReply(conversation, group_of(activity), user_of(activity), str(payload["id"]),
                       root, f"teams:{conversation.base}:save:{activity.id or payload['id']}",
                       team_of(activity))


ASK_COMMAND = "askSift"  # "Ask Sift about this" (deploy/teams/manifest.json)


@dataclass(frozen=True)
class AskedAbout:
    """"Ask Sift about this" on a message: its text, and who asked (answered in their
    personal chat with Sift, under the DM rule)."""

    key: str  # the invoke's id: a redelivery is dropped
    tenant: str
    user: str  # the asker's Entra object id (their groups follow it)
    account: str  # their Teams account id, which a personal chat is opened with
    bot: str  # Sift's own account id in Teams
    text: str


def parse_ask(activity: Activity) -> AskedAbout | None:
    """The message action's composeExtension/fetchTask for "Ask Sift about this"."""
    value = activity.value if isinstance(activity.value, Mapping) else {}
    payload = value.get("messagePayload")
    if value.get("commandId") != ASK_COMMAND or not isinstance(payload, Mapping):
        return None
    body = payload.get("body")
    body = body if isinstance(body, Mapping) else {}
    content = body.get("content")
    content = content if isinstance(content, str) else ""
    text = question_text(BeautifulSoup(content, "html.parser").get_text(" ")
                         if body.get("contentType") == "html" else content, ())
    sender, bot = activity.from_property, activity.recipient
    if sender is None or not sender.id or bot is None or not bot.id:
        return None
    conversation = conversation_of(activity)
    return AskedAbout(f"teams:ask:{activity.id or payload.get('id')}", conversation.tenant,
                      user_of(activity), sender.id, bot.id, text)
