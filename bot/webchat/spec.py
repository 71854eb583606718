"""The web chat as a surface of `sift serve`: its settings, start-up line and builder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.chat.policy import PolicyIds
from bot.settings_check import is_loopback
from bot.surface_spec import Around, Endpoint, Place, Section, SurfaceSpec

if TYPE_CHECKING:
    from bot.settings import Settings

PLATFORM = "web"


class WebChatSettings(Section):
    """The chat page at / of `sift serve` (`[web_chat]`, SIFT_WEB_CHAT__*): open on loopback;
    beyond it only behind the admin console's sign-in."""

    enabled: bool = True
    # The question box's hint; by default a question the sample answers while the sample is
    # the knowledge base, and a neutral one once sift.toml names sources of its own.
    placeholder: str = ""


SAMPLE_HINT = "What is the expense limit for client dinners?"
OWN_HINT = "Ask a question about your documents"


def config(settings: Settings) -> WebChatSettings:
    section: WebChatSettings = SPEC.section_of(settings)
    if section.placeholder:
        return section
    hint = OWN_HINT if settings.sources else SAMPLE_HINT
    return section.model_copy(update={"placeholder": hint})


def status(c: WebChatSettings, place: Place) -> str:
    if not c.enabled:
        return "Web chat: off (SIFT_WEB_CHAT__ENABLED is false)"
    if is_loopback(place.host):
        return f"Web chat: open {place.base_url}/ in a browser"
    if place.console:
        return f"Web chat: on at {place.base_url}/ for people signed in to the admin console"
    return (f"Web chat: off (SIFT_HOST {place.host} is reachable from other machines and "
            "no sign-in protects it: set SIFT_ADMIN__PASSWORD or SIFT_ADMIN__OIDC__ISSUER)")


def build(c: WebChatSettings, around: Around) -> Endpoint | None:
    """Open on loopback; beyond it only behind the console's sign-in, else off (the start-up
    line says why)."""
    from bot.webchat.app import WebChat

    if not c.enabled:
        return None
    beyond = not is_loopback(around.place.host)
    if beyond and around.gate is None:
        return None
    return WebChat(around.flow, max_chars=around.max_message_chars,
                   gate=around.gate if beyond else None, max_in_flight=around.max_in_flight,
                   placeholder=c.placeholder or SAMPLE_HINT)


# A conversation id of the web chat is Sift's own: a policy may name any (or '*').
SPEC = SurfaceSpec(PLATFORM, "web_chat", WebChatSettings, config, build, status,
                   policy_ids=PolicyIds())
