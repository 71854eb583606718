"""MCP as a surface of `sift serve`: its settings, start-up line and builder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.chat.policy import PolicyIds
from bot.surface_spec import Around, Endpoint, Place, Section, SurfaceSpec

if TYPE_CHECKING:
    from bot.settings import Settings

PLATFORM = "mcp"
PATH = "/mcp"


class McpSettings(Section):
    """The MCP endpoint `/mcp` of `sift serve` (`[mcp]`, SIFT_MCP__*): streamable HTTP, every
    call with a personal access token, or an OAuth access token for /mcp from the console's
    OpenID provider, as its bearer token."""

    enabled: bool = True


def config(settings: Settings) -> McpSettings:
    section: McpSettings = SPEC.section_of(settings)
    return section


def status(c: McpSettings, place: Place) -> str:
    if not c.enabled:
        return "MCP: off (SIFT_MCP__ENABLED is false)"
    return (f"MCP: on at {place.base_url}{PATH} (streamable HTTP) for personal access tokens "
            "(sift tokens create)")


def build(c: McpSettings, around: Around) -> Endpoint | None:
    from bot.api.auth import Bearers
    from bot.mcp.app import Mcp  # the mcp package loads only when the surface is on

    if not c.enabled or around.tokens is None:
        return None
    return Mcp(around.flow, Bearers(around.tokens, around.oauth), base_url=around.place.base_url,
               host=around.place.host, issuer=around.oidc_issuer,
               max_in_flight=around.max_in_flight)


# Its conversations are each caller's own DMs: a policy for "@direct" scopes them.
SPEC = SurfaceSpec(PLATFORM, "mcp", McpSettings, config, build, status, policy_ids=PolicyIds())
