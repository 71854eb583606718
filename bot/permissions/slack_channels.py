"""Who may read a private Slack channel's threads: its current members (conversations.members)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.permissions.cache import TtlCache
from bot.permissions.slack_identity import LookupFailed
from sync.connectors.slack import PRIVATE_PREFIX


class SlackChannelMembers:
    """The `slack:channel:<id>` principals of the private channels the Slack sources list
    (ids, or names resolved through conversations.list) that a person is a member of now.
    Members, channel ids and email look-ups are cached for the identity TTL."""

    def __init__(self, client: AsyncWebClient, channels: tuple[str, ...], ttl_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._refs = tuple(dict.fromkeys(c.strip() for c in channels if c.strip()))
        self._private: TtlCache[tuple[str, ...]] = TtlCache(ttl_s, clock)
        self._members: TtlCache[frozenset[str]] = TtlCache(ttl_s, clock)
        self._by_email: TtlCache[str] = TtlCache(ttl_s, clock)

    @property
    def configured(self) -> bool:
        return bool(self._refs)

    async def principals_of(self, user: str) -> tuple[str, ...]:
        """The private channels `user` (a Slack id) is in, as the connector marks them."""
        found = []
        for channel in await self.private_ids():
            if user in await self._members_of(channel):
                found.append(f"{PRIVATE_PREFIX}{channel}")
        return tuple(found)

    async def user_by_email(self, email: str) -> str:
        """A Teams, web-chat or `sift ask --as` asker's Slack id (users.lookupByEmail)."""
        key = email.strip().casefold()
        cached = self._by_email.get(key)
        if cached is not None:
            return cached
        try:
            user = str(((await self._call("users.lookupByEmail", email=key)).get("user")
                        or {}).get("id") or "")
        except LookupFailed as exc:
            if "users_not_found" not in str(exc):
                raise
            user = ""  # nobody in Slack has that email: no channel of theirs
        self._by_email.put(key, user)
        return user

    async def private_ids(self) -> tuple[str, ...]:
        """The ids of the listed channels that are private (names resolved), cached."""
        cached = self._private.get("ids")
        if cached is not None:
            return cached
        private: list[str] = []
        names = [r.lstrip("#") for r in self._refs if r.startswith("#")]
        if names:
            listed = await self._all("conversations.list", "channels",
                                     types="private_channel", exclude_archived="true")
            private += [str(c["id"]) for c in listed if c.get("name") in names]
        for ref in self._refs:
            if not ref.startswith("#"):
                info = (await self._call("conversations.info", channel=ref)).get("channel")
                if (info or {}).get("is_private"):
                    private.append(ref)
        ids = tuple(dict.fromkeys(private))
        self._private.put("ids", ids)
        return ids

    async def _members_of(self, channel: str) -> frozenset[str]:
        cached = self._members.get(channel)
        if cached is None:
            cached = frozenset(str(u) for u in await self._all("conversations.members",
                                                                "members", channel=channel))
            self._members.put(channel, cached)
        return cached

    async def _all(self, method: str, key: str, **params: str) -> list[Any]:
        items: list[Any] = []
        cursor = ""
        while True:
            page = await self._call(method, limit="200", **params,
                                    **({"cursor": cursor} if cursor else {}))
            items += list(page.get(key) or [])
            cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor:
                return items

    async def _call(self, method: str, **params: str) -> dict[str, Any]:
        try:
            response = await self._client.api_call(method, http_verb="GET", params=params)
        except SlackApiError as exc:
            raise LookupFailed(f"{method} failed: {exc.response.get('error')}") from exc
        except Exception as exc:  # network, timeouts: nobody is a member, never everybody
            raise LookupFailed(f"{method} failed: {type(exc).__name__}: {exc}") from exc
        return dict(response.data) if isinstance(response.data, dict) else {}
