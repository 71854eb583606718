"""A served Sift with personal access tokens, and the two ways another tool reaches it: the
HTTP API (aiohttp) and /mcp (the `mcp` package's own client over streamable HTTP)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult

from tests.scenarios.stack import ServedSift


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str]


async def api(sift: ServedSift, method: str, path: str, token: str | None = None, *,
              json_body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with aiohttp.ClientSession() as session, session.request(
            method, sift.base_url + path, json=json_body, headers=sent) as response:
        text = await response.text()
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        return Reply(response.status, body, dict(response.headers))


@contextlib.asynccontextmanager
async def mcp_session(sift: ServedSift, token: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session on /mcp, the token as its bearer token."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, streamable_http_client(f"{sift.base_url}/mcp", http_client=http) as (
            read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
