"""The person's Slack language (users.info with include_locale), kept a while per person."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.slack.outbound import SlackOutbound
from rag.i18n import speaking

log = logging.getLogger(__name__)
TTL_S = 3600.0  # a person changes their Slack language rarely; one call an hour is plenty
MAX_PEOPLE = 10_000


class SlackLocales:
    """users.info's `locale` ("de-DE") for each person, cached; "" when Slack gives none."""

    def __init__(self, out: SlackOutbound, ttl_s: float = TTL_S) -> None:
        self._out = out
        self._ttl_s = ttl_s
        self._known: OrderedDict[str, tuple[float, str]] = OrderedDict()

    async def of(self, user: str) -> str:
        now = time.monotonic()
        kept = self._known.get(user)
        if kept is not None and kept[0] > now:
            return kept[1]
        try:
            locale = await self._out.user_locale(user)
        except SlackApiError as exc:
            # English is a fine answer to a lookup that failed; the next message tries again.
            log.warning("no Slack locale for %s, answering in English: %s", user, exc)
            locale = ""  # kept too: a person Slack will not describe costs one call an hour
        self._known[user] = (now + self._ttl_s, locale)
        self._known.move_to_end(user)
        while len(self._known) > MAX_PEOPLE:
            self._known.popitem(last=False)
        return locale

    async def speaking_as(self, user: str, work: Callable[[], Coroutine[Any, Any, None]]
                          ) -> None:
        """Run `work()` with Sift's sentences in `user`'s language."""
        with speaking(await self.of(user) if user else ""):
            await work()
