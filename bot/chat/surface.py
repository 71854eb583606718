"""What a chat platform does for the flow, for one conversation: the port each adapter fills."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from bot.chat.message import Thread, Vote
from rag import messages
from rag.ports import TextSink
from rag.types import Answer


@dataclass(frozen=True)
class Delivery:
    """How an answer is shown: `private` to the asker alone inside a shared conversation (an
    ephemeral message); which buttons it carries."""

    private: bool = False
    share: bool = False  # a "Share to channel" button (private answers in a channel)
    share_blocked: str = ""  # why sharing is not offered (shown instead of the button)
    help: bool = False  # a "Still need help?" button (a policy names people to call)


class Surface(Protocol):
    """One conversation on one platform. Methods that only inform must not raise for
    platform hiccups they can absorb; a raised error ends in `failure`."""

    async def thread(self) -> Thread | None:
        """The platform's own thread history, or None where the platform keeps none."""
        ...

    def working(self, delivery: Delivery) -> AbstractAsyncContextManager[TextSink | None]:
        """A working indicator while the answer is prepared; yields a preview sink when the
        surface shows the answer while it is written."""
        ...

    async def deliver(self, answer: Answer, delivery: Delivery) -> str:
        """Show the answer; returns the platform's id of the message that carries it."""
        ...

    async def notice(self, text: str) -> None:
        """One sentence for the asker only (a refusal, a thank-you)."""
        ...

    async def failure(self, correlation_id: str, message: str = messages.INTERNAL_ERROR
                      ) -> None:
        """Tell the asker that it failed (`message`: why, in one sentence), with a reference
        the operator can find in the log."""
        ...

    async def escalate(self, people: Sequence[str]) -> None:
        """Call the named people into the conversation ("Still need help?", a 👎)."""
        ...

    async def voted(self, vote: Vote, interaction_id: int) -> str | None:
        """Acknowledge a stored vote the platform's way (thanks, or ask what was missing);
        returns the thread where the surface asked for a comment, None when it did not."""
        ...
