"""A question's page shows its tokens per stage with the provider, model and estimated cost."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from sqlalchemy import insert

from storage.db import Database
from storage.models import Interaction
from tests.admin.conftest import NOW, Console

ASKED = 77


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """Only the one question this module reads (the shared seed's counts stay as they are)."""
    db = Database(f"sqlite:///{tmp_path_factory.mktemp('cost') / 'sift.db'}")
    db.upgrade()
    with db.write() as session:
        session.execute(insert(Interaction), [{
            "id": ASKED, "created_at": NOW, "platform": "slack", "channel": "C1",
            "question": "How do I rotate keys?", "answer": "In the vault [1].",
            "status": "answered", "mode": "accurate", "timings_ms": {"total": 900},
            "llm_provider": "bedrock",
            "models": {"grade": "us.anthropic.claude-haiku-5-5-v1:0",
                       "generate": "us.anthropic.claude-sonnet-5-5-v1:0"},
            "usage": {"grade": {"input_tokens": 20_000, "output_tokens": 1_000,
                                "cache_read_tokens": 0, "cache_write_tokens": 0, "calls": 20},
                      "generate": {"input_tokens": 3_000, "output_tokens": 400,
                                   "cache_read_tokens": 0, "cache_write_tokens": 0,
                                   "calls": 1}}}])
    yield db
    db.dispose()


async def test_the_question_page_prices_each_stage_by_provider_and_model(
        console: Console) -> None:
    assert (await console.sign_in()).status == 303
    response = await console.client.get(f"/admin/questions/{ASKED}")
    html = await response.text()
    assert response.status == 200
    rows = re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td><td>([^<]+)</td>.*?"
                      r"<td class=\"n\">([\d.]+)</td></tr>", html)
    # The default prices: Haiku $1/$5, Sonnet $3/$15 per million tokens.
    assert rows == [("grade", "bedrock", "us.anthropic.claude-haiku-5-5-v1:0", "0.02500"),
                    ("generate", "bedrock", "us.anthropic.claude-sonnet-5-5-v1:0", "0.01500")]
    assert re.search(r"this question</td><td class=\"n\">0.04000<", html)
