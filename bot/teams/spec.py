"""Microsoft Teams as a surface of `sift serve`: its settings, ids, start-up line, builder."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, SecretStr

from bot.chat.policy import PolicyIds
from bot.surface_spec import Around, Credentials, Endpoint, Place, Section, SurfaceSpec

if TYPE_CHECKING:
    from bot.settings import Settings
    from sync.connectors.teams import TeamsConnector

PLATFORM = "teams"
STREAM_INTERVAL_S = 1.0  # Teams accepts about one streaming request a second


class TeamsCredentials(Credentials):
    """The Azure Bot's app: SIFT_TEAMS_APP_ID, SIFT_TEAMS_APP_PASSWORD, SIFT_TEAMS_TENANT_ID."""

    app_id: str = ""
    app_password: SecretStr | None = None  # or [teams] certificate_pfx
    tenant_id: str = ""


class TeamsSettings(Section):
    """`[teams]` / SIFT_TEAMS__*; the credentials keep their flat names (SIFT_TEAMS_APP_ID)."""

    # Mount POST /api/messages in `sift serve`. Unset: on when SIFT_TEAMS_APP_ID is, so a
    # fresh server takes no unauthenticated Teams traffic; true without an app id is
    # anonymous local testing (loopback only).
    enabled: bool | None = None
    streaming: bool = True  # personal chats: Teams' streaming protocol, the answer as written
    stream_interval_s: float = Field(STREAM_INTERVAL_S, ge=0)  # one streaming update per this
    citation_entities: bool = True  # False: a numbered source list instead of citation pop-ups
    typing_interval_s: float = Field(3.0, gt=0)
    send_retries: int = Field(4, ge=0, le=10)  # connector 429/412/502/504
    retry_max_wait_s: float = Field(30.0, gt=0)
    certificate_pfx: Path | None = None  # instead of SIFT_TEAMS_APP_PASSWORD


@dataclass(frozen=True)
class TeamsConfig:
    app_id: str
    app_password: str | None
    tenant_id: str
    options: TeamsSettings
    # Graph for reading channel threads (answers captured from them); None: not readable.
    threads: Callable[[], TeamsConnector | None] | None = None

    @property
    def enabled(self) -> bool:
        on = self.options.enabled
        return bool(self.app_id) if on is None else on


def config(settings: Settings) -> TeamsConfig:
    c: TeamsCredentials = SPEC.credentials_of(settings)
    password = c.app_password

    def threads() -> TeamsConnector | None:
        from bot.teams.source import thread_connector

        return thread_connector(settings)

    return TeamsConfig(c.app_id, password.get_secret_value() if password is not None else None,
                       c.tenant_id, SPEC.section_of(settings), threads)


def status(c: TeamsConfig, place: Place) -> str:
    if c.options.enabled is False:
        return "Teams: off (SIFT_TEAMS__ENABLED is false)"
    if not c.enabled:
        return ("Teams: off (SIFT_TEAMS_APP_ID is not set; to try Teams locally without an "
                "app, set SIFT_TEAMS__ENABLED=true and listen on 127.0.0.1)")
    if c.app_id:
        return f"Teams: on at {place.base_url}/api/messages (app {c.app_id})"
    return (f"Teams: on at {place.base_url}/api/messages for local testing only (anonymous: "
            "SIFT_TEAMS_APP_ID is not set)")


def check(c: TeamsConfig, place: Place) -> None:
    from bot.teams.auth import check_exposure

    check_exposure(c, place.host)


def build(c: TeamsConfig, around: Around) -> Endpoint | None:
    if not c.enabled:
        return None
    from bot.teams.app import TeamsEndpoint  # the Agents SDK loads only for serving
    from bot.teams.auth import auth_configuration

    return TeamsEndpoint(auth_configuration(c, around.place.host), c.options, around.flow,
                         max_in_flight=around.max_in_flight, capture=around.capture,
                         threads=c.threads)


# Channels and chats: "19:…@thread.tacv2/skype", "a:…", "8:…", "29:…". People: Teams user
# ids (29:…) and Entra object ids.
POLICY_IDS = PolicyIds(
    re.compile(r"^(19:[^\s;]+@thread\.[a-z0-9]+|a:[^\s;]+|8:[^\s;]+|29:[^\s;]+)$"),
    "a Teams conversation id such as 19:abc…@thread.tacv2, or a team id",
    re.compile(r"^29:[^\s;]+$|^[0-9a-f-]{36}$"), "a Teams user id (29:…) or AAD object id")
SPEC = SurfaceSpec(PLATFORM, "teams", TeamsSettings, config, build, status, check=check,
                   policy_ids=POLICY_IDS, credentials=TeamsCredentials)
