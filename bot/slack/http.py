"""The /slack/events route on the `sift serve` aiohttp server: request in, bolt, response out."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

from bot.slack.gate import Refused, check_request

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"


def events_handler(bolt: AsyncApp, signing_secret: str
                   ) -> Callable[[web.Request], Awaitable[web.Response]]:
    verifier = SignatureVerifier(signing_secret)

    async def slack_events(request: web.Request) -> web.Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            check_request(await request.read(), headers, verifier)
        except Refused as refused:
            log.warning("Slack: refused a request from %s: %s", request.remote, refused)
            return web.Response(status=refused.status, text="Refused.")
        # bolt verifies the signature and timestamp, answers url_verification and ssl_check
        return await to_aiohttp_response(await bolt.async_dispatch(await to_bolt_request(request)))

    return slack_events


def add_slack_routes(web_app: web.Application, bolt: AsyncApp, signing_secret: str) -> None:
    web_app.router.add_post(EVENTS_PATH, events_handler(bolt, signing_secret))
