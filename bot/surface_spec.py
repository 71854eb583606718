"""The shape of a chat surface of `sift serve`: its spec, what it is given, its lifecycle."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from bot.chat.policy import PolicyIds

if TYPE_CHECKING:
    from bot.answers.owners import Owners
    from bot.api.auth import TokenCheck
    from bot.api.oauth import OAuthTokens
    from bot.chat.capture import CaptureFlow
    from bot.chat.flow import ChatFlow
    from bot.settings import Settings
    from bot.webchat.app import Gate

C = TypeVar("C")  # what a surface's builder takes: its section, with its credentials


class Section(BaseModel):
    """A surface's own settings table (`[slack]`, SIFT_SLACK__*): misspelt keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # read, never rewritten


class Credentials(BaseModel):
    """A surface's secrets under flat names, as the platform's own guides spell them: field
    `bot_token` of the `slack` surface is the setting `slack_bot_token` (SIFT_SLACK_BOT_TOKEN).
    The settings gain one top-level field per credential from the surface registry."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Place:
    """Where `sift serve` runs, for the start-up lines and the checks made before it starts."""

    host: str
    base_url: str  # where people reach it: SIFT_PUBLIC_URL, else http://host:port
    console: bool = False  # the admin console is on (its sign-in can guard a page)


@dataclass(frozen=True)
class Around:
    """What every surface is given to build itself: never the whole Settings."""

    flow: ChatFlow  # the one ask and vote flow
    place: Place
    max_in_flight: int  # questions, votes and clicks in progress per surface (SIFT_CHAT__…)
    history_turns: int
    max_message_chars: int
    sources: tuple[str, ...] = ()  # the configured sources' names, for the surfaces that list them
    gate: Gate | None = None  # the console's sign-in, for a page reachable from other machines
    # Where a surface that is also a source (Slack channels, `kind = "slack"`) hands the id
    # of a document its events changed; None when no source of its kind is configured.
    pushed: Callable[[str], None] | None = None
    capture: CaptureFlow | None = None  # people's replies taken as answers (bot/chat/capture)
    # Who a bearer token is (personal access tokens), for the surfaces other tools call (the
    # HTTP API, MCP); None where no database holds them.
    tokens: TokenCheck | None = None
    oidc_issuer: str = ""  # the console's OpenID provider, the authorization server MCP names
    owners: Owners | None = None  # their keep / retire buttons under review reminders
    oauth: OAuthTokens | None = None  # its access tokens, where it is configured


class Endpoint(Protocol):
    """One running surface. `mount` adds its routes before the site starts; `start` connects
    what needs connecting (Socket Mode); `drain` finishes the work in flight after the site
    stopped taking requests; `close` lets go of connections. A surface that can start a
    conversation (a reminder, the digest) also has a `notifier` (bot/chat/notify.py)."""

    def mount(self, web_app: web.Application) -> None: ...

    async def start(self) -> None: ...

    async def drain(self, timeout_s: float) -> None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class SurfaceSpec(Generic[C]):
    """A chat surface, as a connector is a ConnectorSpec: listed once in bot/surfaces.py, and
    `sift serve`, its start-up lines, the settings and the channel policies follow from it.

    `platform` is what its questions are recorded under ("slack"); `section_name` its settings
    table ("slack", "web_chat") and `section` that table's model; `credentials` the secrets
    it keeps under flat names (SIFT_SLACK_BOT_TOKEN). `config` reads both into what `build`
    takes; `build` returns None when the surface is off, `status` says which and why.
    `check` refuses, before anything starts, a configuration that cannot be served safely
    (raise ConfigError naming the setting). `policy_ids` are the ids a channel policy may
    name for this platform (its channels, the people `escalate_to` calls); a surface without
    them has no channel policies."""

    platform: str
    section_name: str
    section: type[Section]
    config: Callable[[Settings], C]
    build: Callable[[C, Around], Endpoint | None]
    status: Callable[[C, Place], str]
    check: Callable[[C, Place], None] | None = None
    policy_ids: PolicyIds | None = None
    credentials: type[Credentials] | None = None
    # The built-in channel policies' follow-ups default for this platform's conversations,
    # read from its section (Slack's `follow_ups_without_mention`); None: follow-ups on.
    follow_ups: Callable[[C], bool] | None = None

    def section_of(self, settings: Any) -> Any:
        """The surface's own table of `settings` (a field the registry added to Settings)."""
        return getattr(settings, self.section_name)

    def flat_name(self, credential: str) -> str:
        """The top-level setting a credential is read from: `slack_bot_token`."""
        return f"{self.section_name}_{credential}"

    def credentials_of(self, settings: Any) -> Any:
        """The surface's credentials, from the flat fields the registry added to Settings."""
        if self.credentials is None:
            return None
        return self.credentials(**{name: getattr(settings, self.flat_name(name))
                                   for name in self.credentials.model_fields})
