"""Pytest fixtures that start the local fake vendor servers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.anthropic_server import FakeAnthropic


@pytest.fixture
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    server = FakeAnthropic()
    await server.start()
    yield server
    await server.stop()
