"""Sift's log at INFO is about Sift: the HTTP stack under the Anthropic SDK stays quiet."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.app import App, configure_logging
from bot.settings import Settings
from rag.ports import LLMRequest
from tests.fakes.anthropic_server import FakeAnthropic


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def root_log() -> Iterator[Kept]:
    root = logging.getLogger()
    level, handlers = root.level, root.handlers[:]
    kept = Kept()
    root.addHandler(kept)
    yield kept
    root.handlers[:], root.level = handlers, level


async def test_claude_calls_are_not_logged_at_info(tmp_path: Path, root_log: Kept,
                                                   fake_anthropic: FakeAnthropic) -> None:
    configure_logging("INFO")
    app = App(Settings(data_dir=tmp_path, anthropic_api_key=SecretStr("sk-test-key"),
                       anthropic_base_url=fake_anthropic.url))
    assert app.llm is not None
    try:
        response = await app.llm.complete(LLMRequest(
            model="claude-haiku-5-5", system="# Role: tester", max_tokens=16,
            messages=(("user", "hello"),)))
    finally:
        await app.aclose()
    assert response.text and fake_anthropic.requests  # the call really went out
    about_the_call = [r for r in root_log.records if "/v1/messages" in r.getMessage()]
    assert about_the_call == []
