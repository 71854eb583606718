"""The capture flow, for every platform: a person's reply in a thread becomes a pending answer
draft (the asker's ✅ where Sift could not answer, or "Save to Sift" on any reply)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.chat.access import PUBLIC, AccessResolver, Asker, Audience, Visibility
from bot.chat.deflection import Outcomes
from bot.chat.flow import guarded
from bot.chat.surface import Surface
from rag import messages
from rag.patience import NO_RETRY, Retrying
from rag.types import Platform
from storage.answers import NewDraft, StoredDraft, ThreadAsk

log = logging.getLogger(__name__)
# How a reply was picked: the asker's ✅, anyone's "Save to Sift", or the asker's click on
# the "Save as the answer" button Sift offered them after a person replied.
REACTION, SHORTCUT, BUTTON = "reaction", "shortcut", "button"
ASKERS_PICKS = (REACTION, BUTTON)  # only the asker, only where Sift left the question open
PUBLIC_KIND, PRIVATE_KIND, DIRECT_KIND = "public", "private", "direct"
CAPTURED_PREFIX = "sift:"  # principals of captured answers: a conversation, or one person
CONTEXT_POSTS = 6  # the thread's posts between question and reply a draft keeps, at most


@dataclass(frozen=True)
class Post:
    """One message of a thread as the platform shows it."""

    ref: str  # Slack ts, Teams message id
    user: str
    text: str
    at: datetime
    by_bot: bool = False  # Sift or another bot


@dataclass(frozen=True)
class Place:
    """Where a thread is: its name for a citation and its kind for the answer's access."""

    name: str  # "#it-help", "a direct message"
    kind: str  # public, private, direct
    # Who reads the place, as the platform's own source names them (a Teams channel's team
    # or members); () where its kind says it all (a public Slack channel is everyone's).
    readers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pick:
    """A reply picked as an answer: the asker's ✅, or someone's "Save to Sift"."""

    platform: Platform
    workspace: str
    channel: str
    message_ref: str
    user: str  # who picked it
    how: str  # REACTION, SHORTCUT or BUTTON
    event_key: str = ""  # a redelivered reaction is dropped
    team: str = ""  # the Teams team the channel is in (its policy may be the team's)


class ThreadReader(Protocol):
    """What a platform reads for a capture (Slack: conversations.replies, .info, users)."""

    async def posts(self, channel: str, message_ref: str) -> tuple[Post, ...]:
        """The whole thread holding that message, root first; () when it is in none."""
        ...

    async def place(self, channel: str) -> Place: ...

    async def link(self, channel: str, message_ref: str) -> str: ...

    async def person(self, user: str) -> str:
        """A person's display name ("" when unknown)."""
        ...


class DraftStore(Protocol):
    """Blocking calls (storage.answers.AnswerDrafts and the interactions' thread look-up)."""

    def add(self, draft: NewDraft) -> tuple[StoredDraft, bool]: ...

    def thread_ask(self, platform: str, channel: str, thread: str) -> ThreadAsk | None: ...


class DraftWriter(Protocol):
    async def write(self, question: str, thread: Sequence[tuple[str, str]],
                    reply: str) -> tuple[str, str]:
        """(standalone question, self-contained answer) written only from the thread."""
        ...


class AsWritten:
    """Without a model: the question as asked, the reply as written."""

    async def write(self, question: str, thread: Sequence[tuple[str, str]],
                    reply: str) -> tuple[str, str]:
        return question, reply


def access_for(platform: str, channel: str, place: Place, asker: str) -> tuple[str, ...]:
    """Who may read an answer captured there: a public channel's everyone Sift answers (as a
    Slack source marks its threads), a private channel's members, a DM's asker alone."""
    if place.readers and place.kind != DIRECT_KIND:
        return (*place.readers, channel_principal(platform, channel))
    if place.kind == PUBLIC_KIND:
        return (PUBLIC,)
    if place.kind == PRIVATE_KIND:
        own = (f"slack:channel:{channel}",) if platform == "slack" else ()
        return (*own, channel_principal(platform, channel))
    return (user_principal(platform, asker),) if asker else ()


def channel_principal(platform: str, channel: str) -> str:
    """Held by everyone reading an answer shown in that conversation (bot/permissions)."""
    return f"{CAPTURED_PREFIX}channel:{platform}:{channel}"


def user_principal(platform: str, user: str) -> str:
    """Held by that person reading an answer only they see."""
    return f"{CAPTURED_PREFIX}user:{platform}:{user}"


class SaveOffer(Protocol):
    """Where the platform can offer the asker alone a button under a person's reply."""

    async def offer_save(self, asker: str, replier: str, reply_ref: str) -> None: ...


class ClaimPort(Protocol):
    async def claim(self, event_key: str) -> bool: ...


class AutoApproval(Protocol):
    async def approves(self, pick: Pick, draft: StoredDraft) -> bool:
        """Approved it now, without review (its author is one of the channel's experts)."""
        ...


class CaptureFlow:
    def __init__(self, store: DraftStore, writer: DraftWriter, claim: ClaimPort,
                 retrying: Retrying = NO_RETRY, outcomes: Outcomes | None = None,
                 auto: AutoApproval | None = None) -> None:
        self._outcomes = outcomes or Outcomes(None)
        self._auto = auto
        self._store = store
        self._writer = writer
        self._claim = claim
        self._blocking = retrying.blocking

    async def on_pick(self, pick: Pick, reader: ThreadReader, surface: Surface) -> None:
        """A ✅ on a reply where Sift could not answer, from the asker; or a shortcut."""
        async with guarded(surface, f"{pick.how} on {pick.message_ref}",
                           tell=pick.how != REACTION):
            draft = await self._draft(pick, reader, surface)
            if draft is None:
                return
            stored, created = await self._blocking("saving an answer draft",
                                                   self._store.add, draft)
            log.info("answer draft %d %s from %s in %s", stored.id,
                     "captured" if created else "already held", pick.how, pick.channel)
            if created and self._auto is not None and await self._auto.approves(pick, stored):
                await surface.notice(messages.ANSWER_CAPTURED_APPROVED)
            elif created or pick.how != REACTION:
                await surface.notice(messages.ANSWER_CAPTURED)

    async def on_reply(self, platform: Platform, channel: str, thread: str, reply_ref: str,
                       replier: str, offer: SaveOffer) -> None:
        """A person replied in a thread Sift left open ("not covered", a 👎, a call for help):
        the asker is offered, once per thread, to save the reply as the answer."""
        try:
            ask = await self._blocking("reading the thread's question", self._store.thread_ask,
                                       platform, channel, thread)
            if ask is None or not ask.unresolved or not ask.user or ask.user == replier:
                return
            if not await self._claim.claim(f"{platform}:offer-save:{channel}:{thread}"):
                return
            await offer.offer_save(ask.user, replier, reply_ref)
        except Exception:  # an offer not made is a button fewer; the ✅ still works
            log.exception("could not offer to save the reply %s in %s", reply_ref, channel)

    async def _draft(self, pick: Pick, reader: ThreadReader,
                     surface: Surface) -> NewDraft | None:
        posts = await reader.posts(pick.channel, pick.message_ref)
        reply = next((p for p in posts if p.ref == pick.message_ref), None)
        if reply is None or reply.by_bot or posts[0].ref == reply.ref:
            if pick.how != REACTION:
                await surface.notice(messages.ANSWER_NOT_CAPTURABLE)
            return None  # a reaction on Sift's own answer is a vote, handled elsewhere
        root = posts[0]
        if pick.how in ASKERS_PICKS:  # the asker's ✅ on a person's reply resolves a help question
            await self._outcomes.by_person(pick.platform, pick.channel, root.ref, pick.user)
        ask = await self._blocking("reading the thread's question", self._store.thread_ask,
                                   pick.platform, pick.channel, root.ref)
        if pick.how in ASKERS_PICKS and not _the_askers(ask, pick):
            if pick.how == BUTTON:  # a click is someone's deliberate act: say why not
                await surface.notice(messages.SAVE_NOT_YOURS)
            return None  # only the asker, only where Sift had no answer
        if pick.event_key and not await self._claim.claim(pick.event_key):
            return None
        return await self._compose(pick, reader, posts, reply, ask)

    async def _compose(self, pick: Pick, reader: ThreadReader, posts: Sequence[Post],
                       reply: Post, ask: ThreadAsk | None) -> NewDraft:
        root = posts[0]
        place = await reader.place(pick.channel)
        between = [p for p in posts[1:] if p.ref != reply.ref and not p.by_bot
                   and p.at <= reply.at][-CONTEXT_POSTS:]
        names = {u: await reader.person(u) or u for u in {reply.user, *(p.user for p in between)}}
        context = [(names[p.user], p.text) for p in between]
        asked = ask.question if ask is not None else root.text
        question, answer = await self._writer.write(asked, context, reply.text)
        asker = ask.user if ask is not None else root.user
        return NewDraft(
            captured_by=pick.how, platform=pick.platform, workspace=pick.workspace,
            channel=pick.channel, channel_name=place.name, channel_kind=place.kind,
            thread=root.ref, message_ref=reply.ref, asker=asker, author=reply.user,
            author_name=names[reply.user], answered_at=reply.at,
            link=await reader.link(pick.channel, reply.ref), question=question, answer=answer,
            reply=reply.text, context="\n".join(f"{who}: {text}" for who, text in context),
            access=access_for(pick.platform, pick.channel, place, asker),
            interaction_id=ask.interaction_id if ask is not None else None)



def _the_askers(ask: ThreadAsk | None, pick: Pick) -> bool:
    """A reaction picks an answer only from the asker, where Sift left the question open."""
    return ask is not None and ask.unresolved and ask.user == pick.user


class WithCaptured:
    """The access rule plus the answers people gave in this very conversation: every reader
    of a channel answer is in that channel; a private answer's one reader is its asker."""

    def __init__(self, inner: AccessResolver) -> None:
        self._inner = inner

    async def groups_for(self, asker: Asker, audience: Audience) -> tuple[str, ...]:
        groups = await self._inner.groups_for(asker, audience)
        if audience.visibility is Visibility.CHANNEL:
            own = (channel_principal(asker.platform, audience.channel),) \
                if audience.channel else ()
        else:
            own = (user_principal(asker.platform, asker.user),) if asker.user else ()
        return (*groups, *own)
