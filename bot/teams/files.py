"""A Teams message's attachments fetched for the file reader: only from Teams' own hosts."""

from __future__ import annotations

from functools import partial
from urllib.parse import urlsplit

import aiohttp
from microsoft_agents.hosting.core import TurnContext

from bot.chat.files import Attached, capped
from bot.teams.inbound import TeamsFile

CONNECTOR_CLIENT = "ConnectorClient"  # where the SDK keeps the turn's Bot Connector client
SHAREPOINT_HOSTS = (".sharepoint.com", ".sharepoint.us", ".sharepoint-df.com")
TIMEOUT_S = 30.0


def attached(turn: TurnContext, files: tuple[TeamsFile, ...]) -> tuple[Attached, ...]:
    return tuple(Attached(f.name, f.media_type, 0, partial(download, turn, f)) for f in files)


async def download(turn: TurnContext, file: TeamsFile, limit: int) -> bytes:
    """An inline image through the turn's Bot Connector session (it carries the bot's token)
    from the activity's own service host; a shared file from SharePoint by its downloadUrl,
    which is authorised by itself and gets no token."""
    host = urlsplit(file.url).hostname or ""
    service = urlsplit(turn.activity.service_url or "").hostname or ""
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    if file.with_token:
        client = turn.turn_state.get(CONNECTOR_CLIENT)
        session = getattr(client, "client", None)
        if host != service or not isinstance(session, aiohttp.ClientSession):
            raise ValueError(f"an inline image outside the Bot Connector: {host!r}")
        async with session.get(file.url, allow_redirects=False, timeout=timeout) as r:
            return await _body(r, limit)
    if not (host == service or host.endswith(SHAREPOINT_HOSTS)):
        raise ValueError(f"a file outside SharePoint: {host!r}")
    async with aiohttp.ClientSession() as own, own.get(file.url, timeout=timeout) as r:
        return await _body(r, limit)


async def _body(response: aiohttp.ClientResponse, limit: int) -> bytes:
    if response.status != 200:
        raise ValueError(f"HTTP {response.status} from the attachment's address")
    return await capped(response.content, response.content_length, limit)
