"""What an operator watches, through `sift serve`: /metrics after a replayed Slack question,
who may scrape it, and the probes (/livez stays up while Weaviate is frozen, /readyz goes down).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from storage.models import Feedback, Interaction
from tests.fakes.slack_payloads import BOT_USER, CHANNEL, next_event_id, reaction
from tests.scenarios.slack_stack import Serve
from weaviate_server.process import ManagedWeaviate, free_ports

pytestmark = pytest.mark.weaviate

QUESTION = "How do I rotate the staging database credentials?"
TOKEN = "scrape-token-4d1c9e"
PROXY = "127.0.0.5"


async def fetch(url: str, *, headers: dict[str, str] | None = None, source: str = "127.0.0.1",
                timeout_s: float = 30) -> tuple[int, str]:
    connector = aiohttp.TCPConnector(local_addr=(source, 0), force_close=True)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session, \
            session.get(url, headers=headers or {}) as response:
        return response.status, await response.text()


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape by (name, labels), parsed by prometheus-client's parser."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str,
          **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_after_a_replayed_slack_question(make_served: Serve) -> None:
    s = await make_served()
    await s.driver.mention(f"<@{BOT_USER}> {QUESTION}", ts="1700000000.000100")
    await s.answer_in(CHANNEL)
    answer_ts = s.slack.posted(CHANNEL)[0]["ts"]
    [row] = await s.rows(Interaction, 1, message_ref=answer_ts)
    await s.driver.event(reaction("+1", answer_ts, event_id=next_event_id()))
    await s.rows(Feedback, 1)
    status, text = await fetch(s.sift.base_url + "/metrics")
    assert status == 200, text
    found = samples(text)
    assert value(found, "sift_answers_total", platform="slack", mode=row.mode,
                 outcome="answered") == 1
    timings = row.timings_ms
    for stage in ("understand", "retrieve", "grade", "generate", "total"):
        assert value(found, "sift_stage_seconds_count", stage=stage) == 1, stage
        # The histogram holds the very time the interaction recorded for the stage.
        assert value(found, "sift_stage_seconds_sum", stage=stage) == \
            pytest.approx(timings[stage] / 1000, abs=1e-6)
    models = row.models
    calls = sum(v for (name, _), v in found.items() if name == "sift_llm_calls_total")
    assert calls == sum(u["calls"] for u in row.usage.values())
    grade_in = sum(v for (name, labels), v in found.items() if name == "sift_llm_tokens_total"
                   and ("model", models["grade"]) in labels and ("kind", "input") in labels)
    assert grade_in >= row.usage["grade"]["input_tokens"] > 0
    assert value(found, "sift_llm_cost_usd_total", provider="anthropic",
                 model=models["generate"]) > 0
    assert value(found, "sift_grade_cache_total", result="miss") > 0
    assert value(found, "sift_votes_total", vote="up") == 1
    assert value(found, "sift_questions_in_flight") == 0
    assert value(found, "sift_dependency_up", dependency="weaviate") == 1
    assert value(found, "sift_dependency_up", dependency="database") == 1


async def test_metrics_need_the_token_when_one_is_set(make_served: Serve) -> None:
    s = await make_served(metrics={"token": SecretStr(TOKEN)})
    url = s.sift.base_url + "/metrics"
    assert (await fetch(url))[0] == 401
    assert (await fetch(url, headers={"Authorization": "Bearer wrong"}))[0] == 401
    assert (await fetch(url, headers={"Authorization": f"Basic {TOKEN}"}))[0] == 401
    status, text = await fetch(url, headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and "sift_answers_total" in text


async def test_metrics_without_a_token_answer_loopback_clients_only(
        make_served: Serve) -> None:
    s = await make_served(trusted_proxies=[PROXY])
    url = s.sift.base_url + "/metrics"
    assert (await fetch(url))[0] == 200
    # Through a local proxy, on behalf of someone elsewhere: refused, naming the setting.
    status, text = await fetch(url, source=PROXY, headers={"X-Forwarded-For": "203.0.113.7"})
    assert status == 403 and "SIFT_METRICS__TOKEN" in text
    # A forged X-Forwarded-For does not make a local client look remote, nor the reverse.
    assert (await fetch(url, source="127.0.0.9",
                        headers={"X-Forwarded-For": "203.0.113.7"}))[0] == 200


async def wait_status(url: str, wanted: int, within_s: float) -> tuple[int, dict[str, object]]:
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        status, text = await fetch(url, timeout_s=within_s)
        if status == wanted or asyncio.get_running_loop().time() > deadline:
            return status, json.loads(text)
        await asyncio.sleep(0.2)


@pytest.mark.slow
async def test_livez_stays_up_while_weaviate_is_frozen_and_readyz_goes_down(
        make_served: Serve, tmp_path: Path, weaviate_server: ManagedWeaviate) -> None:
    frozen = ManagedWeaviate(weaviate_server.binary, tmp_path / "frozen", free_ports())
    frozen.start(timeout_s=120)
    try:
        s = await make_served(weaviate=frozen)
        base = s.sift.base_url
        assert (await wait_status(base + "/readyz", 200, 30))[0] == 200
        pid = frozen.status().pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            status, body = await wait_status(base + "/readyz", 503, 30)
            assert status == 503 and body["weaviate"] == {
                "ok": False, "detail": "TimeoutError: "}, body
            # Liveness asks nothing of Weaviate: answered at once, every time.
            for _ in range(3):
                live, text = await fetch(base + "/livez", timeout_s=2)
                assert live == 200 and json.loads(text)["status"] == "ok"
            assert (await fetch(base + "/healthz"))[0] == 503  # today's alias of readiness
        finally:
            os.kill(pid, signal.SIGCONT)
        assert (await wait_status(base + "/readyz", 200, 30))[0] == 200
    finally:
        frozen.stop()
