"""The /slack/events route on the `sift serve` aiohttp server: request in, bolt, response out."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp

EVENTS_PATH = "/slack/events"


def events_handler(bolt: AsyncApp) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def slack_events(request: web.Request) -> web.Response:
        # bolt verifies the signature and timestamp, answers url_verification and ssl_check
        return await to_aiohttp_response(await bolt.async_dispatch(await to_bolt_request(request)))

    return slack_events


def add_slack_routes(web_app: web.Application, bolt: AsyncApp) -> None:
    web_app.router.add_post(EVENTS_PATH, events_handler(bolt))
