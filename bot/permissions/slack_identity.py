"""Who a Slack user is: their email (users.info) and their user groups (usergroups.*)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.permissions.cache import TtlCache
from bot.permissions.directory import Identity


class LookupFailed(Exception):
    """An identity lookup did not succeed; the asker gets public answers only."""


class SlackDirectory:
    """Emails per user (cached) and the members of the user groups `[[groups]]` name."""

    def __init__(self, client: AsyncWebClient, handles: frozenset[str], ttl_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._handles = handles
        self._emails: TtlCache[str] = TtlCache(ttl_s, clock)
        self._members: TtlCache[dict[str, frozenset[str]]] = TtlCache(ttl_s, clock)

    async def identity(self, user: str) -> Identity:
        email = await self.email_of(user)
        members = await self.members() if self._handles else {}
        handles = frozenset(h for h, users in members.items() if user in users)
        return Identity(email=email, slack_usergroups=handles)

    async def email_of(self, user: str) -> str:
        cached = self._emails.get(user)
        if cached is not None:
            return cached
        response = await self._call("users.info", user=user)
        profile = (response.get("user") or {}).get("profile") or {}
        email = str(profile.get("email") or "").strip()
        if not email:
            raise LookupFailed(f"users.info gave no email for {user} (the app needs the "
                               "users:read.email scope, or the user has no email)")
        self._emails.put(user, email)
        return email

    async def members(self) -> dict[str, frozenset[str]]:
        """handle -> member user ids, for every handle a group names that exists."""
        cached = self._members.get("all")
        if cached is not None:
            return cached
        ids = await self.usergroup_ids()
        members = {}
        for handle, group_id in ids.items():
            if handle in self._handles:
                response = await self._call("usergroups.users.list", usergroup=group_id)
                members[handle] = frozenset(str(u) for u in response.get("users") or [])
        self._members.put("all", members)
        return members

    async def usergroup_ids(self) -> dict[str, str]:
        """Every user group of the workspace: handle (casefolded) -> id."""
        response = await self._call("usergroups.list")
        return {str(g.get("handle", "")).casefold(): str(g.get("id", ""))
                for g in response.get("usergroups") or [] if g.get("handle")}

    async def missing_handles(self) -> list[str]:
        """Handles some group names that the workspace does not have (start-up check)."""
        present = await self.usergroup_ids()
        return sorted(h for h in self._handles if h not in present)

    async def _call(self, method: str, **params: str) -> dict[str, Any]:
        try:
            response = await self._client.api_call(method, http_verb="GET", params=params)
        except SlackApiError as exc:
            raise LookupFailed(f"{method} failed: {exc.response.get('error')}") from exc
        except Exception as exc:  # network, timeouts: "unknown" too, never "everyone"
            raise LookupFailed(f"{method} failed: {type(exc).__name__}: {exc}") from exc
        return dict(response.data) if isinstance(response.data, dict) else {}
