"""The chat flow for adapter tests: in-memory policies (or none) and public-only access."""

from __future__ import annotations

from collections.abc import Sequence

from bot.chat.access import AccessResolver, PublicOnly
from bot.chat.comments import PendingComments
from bot.chat.files import FileReader
from bot.chat.flow import ChatFlow, Policies
from bot.chat.policy import ChannelPolicy, PolicyDefaults
from bot.chat.service import ChatService
from tests.fakes.memory_expiring import MemoryExpiring


class MemoryPolicies:
    """A PolicyStore: `platform:channel` -> policy."""

    def __init__(self, *policies: ChannelPolicy) -> None:
        self.policies = {(p.platform, p.channel): p for p in policies}

    def first(self, platform: str, channels: Sequence[str]) -> ChannelPolicy | None:
        return next((self.policies[platform, c] for c in channels
                     if (platform, c) in self.policies), None)


def make_flow(service: ChatService, *, follow_ups: bool = True,
              policies: MemoryPolicies | None = None,
              access: AccessResolver | None = None,
              comments: PendingComments | None = None,
              files: FileReader | None = None) -> ChatFlow:
    return ChatFlow(service, Policies(policies or MemoryPolicies(),
                                      PolicyDefaults(follow_ups=dict.fromkeys(
                                          ("slack", "teams", "web"), follow_ups))),
                    access or PublicOnly(),
                    comments or PendingComments(MemoryExpiring()), files=files)
