"""Channel policies: how Sift behaves in one conversation, and how one is found for a message."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from rag.errors import InputError

DEFAULT_CHANNEL = "*"  # the policy of channels that have none
DIRECT_CHANNEL = "@direct"  # the policy of DMs and personal chats
SCOPE_PREFIXES = ("tag:", "type:")  # `sources` may also name document tags and types


@dataclass(frozen=True)
class PolicyIds:
    """The ids a channel policy may name on one platform, as its surface declares them
    (bot/surfaces.py): its channels, and the people `escalate_to` may call. A pattern left
    out accepts any id; a `shape` says what a refused one should have looked like."""

    channel: re.Pattern[str] | None = None
    channel_shape: str = ""
    people: re.Pattern[str] | None = None
    people_shape: str = ""


class Respond(enum.StrEnum):
    MENTION = "mention"  # only when @mentioned (or asked directly)
    QUESTIONS = "questions"  # every top-level message that reads like a question


@dataclass(frozen=True)
class ChannelPolicy:
    platform: str
    channel: str
    label: str = ""
    sources: tuple[str, ...] = ()  # source names, `tag:x`, `type:y`; empty = everything
    respond: Respond = Respond.MENTION
    only_when_confident: bool = False  # auto-answers: silence instead of "not covered"
    escalate_to: tuple[str, ...] = ()  # people / groups to mention on "Still need help?" / 👎
    private_answers: bool = False  # Slack: answers only the asker sees
    follow_ups: bool = True  # thread replies without a mention count as follow-ups
    enabled: bool = True
    audience: tuple[str, ...] = ()  # access groups every member of the channel may see
    # Help channels: the share of questions Sift stays silent on (recorded), so deflection
    # is measured against questions people answered without it.
    holdout: float = 0.0
    # People (user ids) whose replies captured here are approved as answers without review.
    experts: tuple[str, ...] = ()

    @property
    def source_names(self) -> tuple[str, ...]:
        return tuple(s for s in self.sources if not s.startswith(SCOPE_PREFIXES))

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(s[4:] for s in self.sources if s.startswith("tag:"))

    @property
    def doc_types(self) -> tuple[str, ...]:
        return tuple(s[5:] for s in self.sources if s.startswith("type:"))

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.channel}"


class PolicyStore(Protocol):
    """Blocking calls (the flow runs them off the event loop)."""

    def first(self, platform: str, channels: Sequence[str]) -> ChannelPolicy | None:
        """The stored policy of the first of `channels` that has one (one lookup for all)."""
        ...


@dataclass(frozen=True)
class PolicyDefaults:
    """Built-in policies for conversations without a stored one."""

    # Per platform, whether follow-ups need no mention; a platform not named: they need none.
    follow_ups: Mapping[str, bool] = field(default_factory=dict)

    def channel(self, platform: str) -> ChannelPolicy:
        return ChannelPolicy(platform, DEFAULT_CHANNEL, "default",
                             follow_ups=self.follow_ups.get(platform, True))

    def direct(self, platform: str) -> ChannelPolicy:
        return ChannelPolicy(platform, DIRECT_CHANNEL, "direct messages",
                             follow_ups=self.follow_ups.get(platform, True))


def resolve(store: PolicyStore, defaults: PolicyDefaults, platform: str, channel: str, *,
            direct: bool, team: str = "") -> ChannelPolicy:
    """The channel's own policy, else its team's (Teams), else the stored or built-in default."""
    if direct:
        return store.first(platform, (DIRECT_CHANNEL,)) or defaults.direct(platform)
    keys = (*(key for key in (channel, team) if key), DEFAULT_CHANNEL)
    return store.first(platform, keys) or defaults.channel(platform)


@dataclass(frozen=True)
class Known:
    """What a policy may name: the configured sources and the declared access groups."""

    sources: Sequence[str] = ()
    groups: Sequence[str] | None = None  # None: groups are not checked
    platforms: Mapping[str, PolicyIds] = field(default_factory=dict)  # surfaces with policies
    extra: dict[str, str] = field(default_factory=dict)


class PolicyError(InputError):
    """A policy refused; `field` names the one at fault (a form marks it)."""

    def __init__(self, sentence: str, field: str) -> None:
        super().__init__(sentence, user_message=sentence)
        self.field = field


def _refuse(sentence: str, field: str = "channel") -> PolicyError:
    return PolicyError(sentence, field)


def check_channel(platform: str, channel: str, platforms: Mapping[str, PolicyIds]) -> None:
    """A malformed id is refused; an unknown but well-formed one is fine (created later)."""
    ids = platforms.get(platform)
    if ids is None:
        raise _refuse(f"Unknown platform '{platform}'; use one of: {', '.join(platforms)}.",
                      "platform")
    if channel in (DEFAULT_CHANNEL, DIRECT_CHANNEL):
        return
    if ids.channel is not None and not ids.channel.match(channel):
        raise _refuse(f"'{channel}' is not {ids.channel_shape} (or '*' for the default, "
                      "'@direct' for direct messages).")


def _check_person(person: str, platforms: Mapping[str, PolicyIds],
                  field_name: str = "escalate_to") -> None:
    """Anyone some surface can call: an answer in one place may call people on another."""
    callable_by = [ids for ids in platforms.values() if ids.people is not None]
    if not any(ids.people.match(person) for ids in callable_by if ids.people is not None):
        shapes = ", nor ".join(ids.people_shape for ids in callable_by)
        raise _refuse(f"'{person}' in `{field_name}` is not {shapes}.", field_name)


def _check_names(field_name: str, values: Iterable[str], known: Sequence[str] | None,
                 what: str) -> None:
    if known is None:
        return
    for value in values:
        if value not in known:
            listed = ", ".join(known) or "none"
            raise _refuse(f"Unknown {what} '{value}' in `{field_name}`; known {what}s: {listed}.",
                          field_name)


def validate(policy: ChannelPolicy, known: Known) -> ChannelPolicy:
    """The policy back, or InputError naming the one field at fault."""
    check_channel(policy.platform, policy.channel, known.platforms)
    _check_names("sources", policy.source_names, list(known.sources), "source")
    _check_names("audience", policy.audience, known.groups, "group")
    for person in policy.escalate_to:
        _check_person(person, known.platforms)
    for person in policy.experts:
        _check_person(person, known.platforms, "experts")
    if policy.only_when_confident and policy.respond is not Respond.QUESTIONS:
        raise _refuse("`only_when_confident` applies to auto-answer channels: set "
                      "`respond = \"questions\"` too, or leave it off.", "only_when_confident")
    if not 0.0 <= policy.holdout <= MAX_HOLDOUT:
        raise _refuse(f"`holdout` is a share between 0 and {MAX_HOLDOUT}, e.g. 0.05.",
                      "holdout")
    if policy.holdout and policy.respond is not Respond.QUESTIONS:
        raise _refuse("`holdout` applies to help channels: set `respond = \"questions\"` "
                      "too, or leave it at 0.", "holdout")
    if policy.channel == DIRECT_CHANNEL and policy.private_answers:
        raise _refuse("`private_answers` does not apply to direct messages, which are private "
                      "already.", "private_answers")
    return replace(policy, sources=tuple(dict.fromkeys(policy.sources)))


MAX_HOLDOUT = 0.5  # beyond half, the channel is mostly without Sift
_TUPLES = ("sources", "escalate_to", "audience", "experts")
_KEPT_WHEN_SET = ("experts",)  # newer lists: a policy without them is stored as before
_FLAGS = ("only_when_confident", "private_answers", "follow_ups", "enabled")


def policy_settings(policy: ChannelPolicy) -> dict[str, Any]:
    """Every field but the key and label, as stored (JSON)."""
    values: dict[str, Any] = {name: list(getattr(policy, name)) for name in _TUPLES
                              if name not in _KEPT_WHEN_SET or getattr(policy, name)}
    values.update({name: getattr(policy, name) for name in _FLAGS})
    values["respond"] = policy.respond.value
    if policy.holdout:
        values["holdout"] = policy.holdout
    return values


def policy_from(platform: str, channel: str, label: str,
                settings: Mapping[str, Any]) -> ChannelPolicy:
    """A stored policy back; unknown or missing keys fall back to the defaults."""
    base = ChannelPolicy(platform, channel, label)
    values: dict[str, Any] = {}
    for name in _TUPLES:
        if isinstance(settings.get(name), list):
            values[name] = tuple(str(v) for v in settings[name])
    for name in _FLAGS:
        if isinstance(settings.get(name), bool):
            values[name] = settings[name]
    holdout = settings.get("holdout")
    if isinstance(holdout, int | float) and not isinstance(holdout, bool):
        values["holdout"] = float(holdout)
    if settings.get("respond") in {r.value for r in Respond}:
        values["respond"] = Respond(settings["respond"])
    return replace(base, **values)


class _Stored(Protocol):
    @property
    def platform(self) -> str: ...

    @property
    def channel(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def settings(self) -> Mapping[str, Any]: ...


class _Rows(Protocol):
    def first(self, platform: str, channels: Sequence[str]) -> _Stored | None: ...


class StoredPolicies:
    """The PolicyStore over the database's channel_policies table."""

    def __init__(self, rows: _Rows) -> None:
        self._rows = rows

    def first(self, platform: str, channels: Sequence[str]) -> ChannelPolicy | None:
        found = self._rows.first(platform, channels)
        if found is None:
            return None
        return policy_from(found.platform, found.channel, found.label, found.settings)
