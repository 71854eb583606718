"""The HTTP API as a surface of `sift serve`: its settings, start-up line and builder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.chat.policy import PolicyIds
from bot.surface_spec import Around, Endpoint, Place, Section, SurfaceSpec

if TYPE_CHECKING:
    from bot.settings import Settings

PLATFORM = "api"
PATH = "/api/v1"


class ApiSettings(Section):
    """`/api/v1` of `sift serve` (`[api]`, SIFT_API__*): every call needs a personal access
    token (`sift tokens create`) or an OAuth access token from the console's OpenID
    provider, and sees what its person sees in a DM."""

    enabled: bool = True


def config(settings: Settings) -> ApiSettings:
    section: ApiSettings = SPEC.section_of(settings)
    return section


def status(c: ApiSettings, place: Place) -> str:
    if not c.enabled:
        return "HTTP API: off (SIFT_API__ENABLED is false)"
    return (f"HTTP API: on at {place.base_url}{PATH} for personal access tokens "
            f"(sift tokens create; OpenAPI at {place.base_url}{PATH}/openapi.json)")


def build(c: ApiSettings, around: Around) -> Endpoint | None:
    from bot.api.app import Api
    from bot.api.auth import Bearers

    if not c.enabled or around.tokens is None:
        return None
    return Api(around.flow, Bearers(around.tokens, around.oauth), base_url=around.place.base_url,
               issuer=around.oidc_issuer, max_in_flight=around.max_in_flight)


# Its conversations are each caller's own DMs: a policy for "@direct" scopes them.
SPEC = SurfaceSpec(PLATFORM, "api", ApiSettings, config, build, status, policy_ids=PolicyIds())
