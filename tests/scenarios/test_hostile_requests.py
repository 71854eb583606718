"""The attacker's malformed requests through `sift serve`: each is a 4xx with one sentence,
never a 500 or a traceback, and changes nothing (Slack, the signed webhook, the console)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from bot.slack.http import EVENTS_PATH
from storage.models import Interaction
from sync.connectors.http_push import SIGNATURE, TIMESTAMP, signature
from tests.fakes.slack_payloads import sign
from tests.scenarios.slack_stack import Serve, SlackSift

pytestmark = pytest.mark.weaviate

WEBHOOK_SECRET = "hook-secret-3f9a"
FORM = "application/x-www-form-urlencoded"


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad]


async def post_raw(s: SlackSift, path: str, body: bytes, headers: dict[str, str]
                   ) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.post(
            s.sift.base_url + path, data=body, headers=headers) as response:
        return response.status, await response.text()


SIGNED_BUT_MALFORMED: list[tuple[str, str]] = [
    ("{not json", "application/json"),
    (json.dumps({"type": "event_callback", "event": None}), "application/json"),
    (json.dumps({"type": "event_callback", "event": []}), "application/json"),
    (json.dumps({"type": "event_callback", "event": {"type": 5}}), "application/json"),
    (json.dumps([1, 2]), "application/json"),
    ("payload=%7Bnot+json", FORM),
    ("payload=" + quote(json.dumps({"type": "block_actions", "actions": []})), FORM),
    ("payload=" + quote(json.dumps({"type": "block_actions", "actions": None})), FORM),
    ("payload=" + quote(json.dumps([])), FORM),
    ("command=%2Fsift", FORM),  # a slash command without the fields Slack always sends
]


@pytest.mark.parametrize(("body", "content_type"), SIGNED_BUT_MALFORMED)
async def test_signed_but_malformed_slack_bodies_are_refused_without_a_traceback(
        make_served: Serve, caplog: pytest.LogCaptureFixture, body: str,
        content_type: str) -> None:
    s = await make_served()
    status, text = await post_raw(s, EVENTS_PATH, body.encode(),
                                  {"Content-Type": content_type, **sign(body)})
    assert 400 <= status < 500, (status, text)
    await s.driver.settle()
    no_tracebacks(caplog)
    assert s.sift.rows(Interaction) == []


@pytest.mark.parametrize("stamp", ["abc", "", "1e9", "-5", "9" * 400, "１２３"])
async def test_a_bad_slack_timestamp_is_refused_without_a_traceback(
        make_served: Serve, caplog: pytest.LogCaptureFixture, stamp: str) -> None:
    s = await make_served()
    body = json.dumps({"type": "event_callback", "event": {"type": "app_mention"}})
    headers = {"Content-Type": "application/json", **sign(body)}
    headers["X-Slack-Request-Timestamp"] = stamp
    status, _ = await post_raw(s, EVENTS_PATH, body.encode(),
                               {k: v for k, v in headers.items() if v or k[0] != "X"})
    assert status == 401
    no_tracebacks(caplog)


async def hook(s: SlackSift, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    return await post_raw(s, "/sync/hooks/pushed", body, headers)


def webhook_source(tmp_path: Any) -> dict[str, Any]:
    # Nothing listens at its URL: a notification that got through would only fail to sync.
    return {"name": "pushed", "kind": "http", "url": "http://127.0.0.1:9",
            "http": {"item_path": "/items/{id}", "webhook_secret": WEBHOOK_SECRET}}


@pytest.mark.parametrize("given", ["sha256=é" + "0" * 63, "sha256=\u2603", "ünïcode"])
async def test_a_non_ascii_webhook_signature_is_a_401(
        make_served: Serve, caplog: pytest.LogCaptureFixture, tmp_path: Any,
        given: str) -> None:
    s = await make_served(sources=[webhook_source(tmp_path)])
    stamp = str(int(time.time()))
    status, text = await hook(s, b'{"ids": ["1"]}', {
        TIMESTAMP: stamp, SIGNATURE: given, "Content-Type": "application/json"})
    assert status == 401, text
    no_tracebacks(caplog)


async def test_an_exact_replay_of_a_signed_webhook_is_refused(
        make_served: Serve, tmp_path: Any) -> None:
    s = await make_served(sources=[webhook_source(tmp_path)])
    body, stamp = b'{"ids": ["1"]}', str(int(time.time()))
    headers = {TIMESTAMP: stamp, SIGNATURE: signature(WEBHOOK_SECRET, stamp, body),
               "Content-Type": "application/json"}
    assert (await hook(s, body, headers))[0] == 202
    status, text = await hook(s, body, headers)  # the same bytes again, inside the window
    assert status == 409, text
    # A new notification (a new timestamp, so a new signature) is still taken.
    later = str(int(stamp) + 1)
    fresh = {**headers, TIMESTAMP: later, SIGNATURE: signature(WEBHOOK_SECRET, later, body)}
    assert (await hook(s, body, fresh))[0] == 202


@pytest.mark.parametrize("query", ["before=" + "9" * 400, "offset=" + "9" * 400,
                                   "before=-1", "offset=-5", "before=１２"])
async def test_console_paging_with_absurd_numbers_is_not_a_500(
        make_served: Serve, caplog: pytest.LogCaptureFixture, query: str) -> None:
    s = await make_served(admin={"password": "an admin passphrase here"})
    async with aiohttp.ClientSession(s.sift.base_url,
                                     cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        page = await (await browser.get("/admin/login")).text()
        token = page.split('name="csrf" value="')[1].split('"')[0]
        signed = await browser.post("/admin/login", allow_redirects=False, data={
            "csrf": token, "password": "an admin passphrase here", "next": "/admin/"})
        assert signed.status == 303
        for path in ("/admin/questions", "/admin/documents", "/admin/questions/" + "9" * 400):
            response = await browser.get(f"{path}?{query}")
            assert response.status < 500, (path, response.status)
    no_tracebacks(caplog)
