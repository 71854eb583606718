"""Pytest fixtures that start the local fake vendor servers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_server import FakeSlack


@pytest.fixture
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    server = FakeAnthropic()
    await server.start()
    yield server
    await close_test_llms()
    await server.stop()


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack()
    await server.start()
    yield server
    await server.stop()


async def close_test_llms() -> None:
    """Close the LLM clients a test made (tests/rag/builders.py): left to the garbage
    collector, a client closes at some later moment, inside another test's event loop."""
    from tests.rag.builders import OPEN_LLMS

    while OPEN_LLMS:
        await OPEN_LLMS.pop().close()
