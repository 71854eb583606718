"""Sift's sentences in the Teams person's language: the activity's own `locale` ("de-DE")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from microsoft_agents.hosting.core import TurnContext, TurnState

from rag.i18n import speaking

Handler = Callable[[TurnContext, TurnState], Awaitable[None]]


def in_locale(handler: Handler) -> Handler:
    """`handler` with the sender's locale in force, for the turn and the work it starts."""
    async def run(turn: TurnContext, state: TurnState) -> None:
        with speaking(str(turn.activity.locale or "")):
            await handler(turn, state)
    return run
