"""Auto-approval: a reply captured from one of the channel policy's `experts` is approved at
once, by the same review path (indexed, audited, asked again) as a person's approval."""

from __future__ import annotations

import logging

from bot.answers.review import AnswerReview
from bot.chat.capture import DIRECT_KIND, Pick
from bot.chat.flow import Policies
from storage.answers import PENDING, StoredDraft

log = logging.getLogger(__name__)
ACTOR_PREFIX = "expert:"  # the audit log's actor of an automatic approval: whose reply


class ExpertApproval:
    def __init__(self, policies: Policies, review: AnswerReview) -> None:
        self._policies = policies
        self._review = review

    async def approves(self, pick: Pick, draft: StoredDraft) -> bool:
        """Only a pending draft whose author the channel's policy names; a direct message's
        never (nobody else is in it). A failed approval leaves the draft pending, for review."""
        if draft.status != PENDING or draft.channel_kind == DIRECT_KIND:
            return False
        policy = await self._policies.find(pick.platform, draft.channel, direct=False,
                                           team=pick.team)
        if draft.author not in policy.experts:
            return False
        try:
            await self._review.approve(draft.id, f"{ACTOR_PREFIX}{draft.author}")
        except Exception:
            log.exception("approving answer draft %d from expert %s failed; it stays pending",
                          draft.id, draft.author)
            return False
        log.info("answer draft %d approved: %s is an expert in %s", draft.id, draft.author,
                 draft.channel)
        return True
