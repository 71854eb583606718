"""POST /api/messages: the Agents SDK adapter and agent application, routed to Sift's handlers."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable

import jwt
from aiohttp import web
from microsoft_agents.activity import ActivityTypes
from microsoft_agents.authentication.msal import MsalConnectionManager
from microsoft_agents.hosting.aiohttp import (
    CloudAdapter,
    jwt_authorization_decorator,
    start_agent_process,
)
from microsoft_agents.hosting.core import AgentApplication, MemoryStorage, TurnState
from microsoft_agents.hosting.core.authorization import AgentAuthConfiguration

from bot.chat.capture import CaptureFlow
from bot.chat.flow import ChatFlow
from bot.chat.tasks import Background
from bot.teams.connector import RetryingClientFactory, RetryPolicy
from bot.teams.gate import Refusal, check_activity, forwarded
from bot.teams.handlers import TeamsHandlers
from bot.teams.locale import in_locale
from bot.teams.spec import TeamsSettings
from bot.teams.surface import TeamsOptions
from sync.connectors.teams import TeamsConnector

log = logging.getLogger(__name__)
ROUTE = "/api/messages"
FEEDBACK_INVOKE = "message/submitAction"
MESSAGE_ACTION_INVOKE = "composeExtension/fetchTask"  # "Save to Sift" on a message


def build_agent(connections: MsalConnectionManager,
                handlers: TeamsHandlers) -> AgentApplication[TurnState]:
    agent = AgentApplication[TurnState](
        storage=MemoryStorage(), connection_manager=connections,
        # Sift sends its own typing indicator in the proactive turn, strips mentions itself,
        # and keeps conversation history in its database: no SDK conversation/user state.
        start_typing_timer=False, remove_recipient_mention=False, turn_state_factory=TurnState)
    agent.activity(ActivityTypes.message)(in_locale(handlers.on_message))
    agent.invoke(FEEDBACK_INVOKE)(in_locale(handlers.on_feedback))
    agent.invoke(MESSAGE_ACTION_INVOKE)(in_locale(handlers.on_action))
    agent.activity(ActivityTypes.message_reaction)(in_locale(handlers.on_reaction))
    agent.error(handlers.on_error)
    return agent


class TeamsEndpoint:
    """Everything Teams needs inside `sift serve` (an Endpoint: bot/surface_spec.py): `mount`
    adds the route, `drain` lets the answers in flight finish."""

    def __init__(self, auth: AgentAuthConfiguration, settings: TeamsSettings,
                 flow: ChatFlow, *, stream_interval_s: float | None = None,
                 max_in_flight: int = 0, capture: CaptureFlow | None = None,
                 threads: Callable[[], TeamsConnector | None] | None = None) -> None:
        self.auth = auth
        connections = MsalConnectionManager(connections_configurations={
            "SERVICE_CONNECTION": auth})
        policy = RetryPolicy(settings.send_retries, max_wait_s=settings.retry_max_wait_s)
        self.adapter = CloudAdapter(
            channel_service_client_factory=RetryingClientFactory(connections, policy))
        self.tasks = Background("Teams", limit=max_in_flight)
        options = TeamsOptions(settings.streaming, settings.citation_entities,
                               settings.typing_interval_s, settings.stream_interval_s
                               if stream_interval_s is None else stream_interval_s)
        self.handlers = TeamsHandlers(flow, self.adapter, options, self.tasks, capture, threads)
        self.agent = build_agent(connections, self.handlers)
        self.adapter.on_turn_error = self.handlers.on_error

    def handler(self) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        anonymous = bool(self.auth.ANONYMOUS_ALLOWED)

        @jwt_authorization_decorator
        async def messages(request: web.Request) -> web.StreamResponse:
            # After the token check: a caller without a valid token learns nothing of the body.
            refused = check_activity(await request.read(), anonymous=anonymous,
                                     own_port=_own_port(request))
            if refused is not None:
                return _refuse(request, refused)
            response = await start_agent_process(request, self.agent, self.adapter)
            return response if response is not None else web.Response(status=202)

        async def checked(request: web.Request) -> web.StreamResponse:
            if anonymous and forwarded({k.lower(): v for k, v in request.headers.items()}):
                return _refuse(request, Refusal(403, "an unauthenticated request came through "
                                                "a proxy (set SIFT_TEAMS_APP_ID to take "
                                                "Teams traffic from other machines)"))
            if not well_formed_bearer(request.headers.get("Authorization")):
                log.warning("Teams: refused a request whose token has no usable key id")
                return web.json_response({"error": "Invalid token or authentication failed."},
                                         status=401)
            return await messages(request)

        return checked

    def mount(self, web_app: web.Application) -> None:
        # The SDK's JWT check keeps its state under plain string keys (app and request), which
        # aiohttp warns about on every use; the keys are the SDK's, so are the warnings.
        warnings.filterwarnings("ignore", category=web.NotAppKeyWarning,
                                module=r"microsoft_agents\.")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", web.NotAppKeyWarning)
            web_app["agent_configuration"] = self.auth
        web_app.router.add_post(ROUTE, self.handler())

    async def start(self) -> None:
        return None  # Teams calls in; there is nothing to connect

    async def drain(self, timeout_s: float = 30.0) -> None:
        await self.tasks.drain(timeout_s)

    async def close(self) -> None:
        return None


def _own_port(request: web.Request) -> int | None:
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    return int(sockname[1]) if isinstance(sockname, tuple) and len(sockname) >= 2 else None


def _refuse(request: web.Request, refusal: Refusal) -> web.Response:
    log.warning("Teams: refused a request from %s: %s", request.remote, refusal.reason)
    return web.json_response({"error": f"Refused: {refusal.reason}."}, status=refusal.status)


def well_formed_bearer(header: str | None) -> bool:
    """False for a bearer token the SDK's validator would crash on (no `kid` to find its
    signing key by, or no readable header): such a request is refused with 401, not a 500."""
    if header is None:
        return True  # the SDK decides (401, or anonymous on loopback)
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return True  # the SDK answers 401 itself
    try:
        kid = jwt.get_unverified_header(parts[1]).get("kid")
    except jwt.PyJWTError:
        return True  # the SDK's validator maps this to 401
    return isinstance(kid, str) and bool(kid)
