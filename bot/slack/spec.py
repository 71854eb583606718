"""Slack as a surface of `sift serve`: its settings, its ids, its start-up line, its builder."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import Field, SecretStr

from bot.chat.policy import PolicyIds
from bot.surface_spec import Around, Credentials, Endpoint, Place, Section, SurfaceSpec

if TYPE_CHECKING:
    from bot.settings import Settings

PLATFORM = "slack"


# chat.appendStream is rate limited; two updates a second still read as live typing.
APPEND_EVERY_S = 0.5


class SlackCredentials(Credentials):
    """SIFT_SLACK_BOT_TOKEN, SIFT_SLACK_SIGNING_SECRET, SIFT_SLACK_APP_TOKEN, SIFT_SLACK_API_URL."""

    bot_token: SecretStr | None = None
    signing_secret: SecretStr | None = None
    app_token: SecretStr | None = None  # Socket Mode
    api_url: str = ""  # another Web API address (a proxy, or tests' fake Slack)


class SlackSettings(Section):
    """`[slack]` / SIFT_SLACK__*; the credentials keep their flat names (SIFT_SLACK_BOT_TOKEN)."""

    streaming: bool = False  # chat.startStream/appendStream/stopStream instead of one post
    append_every_s: float = Field(APPEND_EVERY_S, ge=0)  # live answers: one appendStream per this
    follow_ups_without_mention: bool = True
    ask_why_on_downvote: bool = True
    assistant_status: bool = False  # "is reading…" status in assistant (DM) threads; needs
    # the app's Agents & AI Apps feature and the assistant:write scope
    api_retries: int = Field(2, ge=0, le=10)  # Web API retries on 429 and 5xx
    # Features the Slack app is set up with: `sift slack manifest` asks only for their scopes.
    slash_command: bool = True  # /sift
    app_home: bool = True  # the Home tab
    assistant: bool = False  # the AI-app split view; needs the assistant:write scope
    # Answers in Slack's `markdown` block, made for AI apps (headings, lists, quotes and code
    # as Slack renders Markdown); answers with tables keep mrkdwn. Unset: with `assistant`.
    markdown_block: bool | None = None
    private_channels: bool = False  # message.groups + groups:history
    directory: bool = False  # users:read.email + usergroups:read (permissions)
    # The assistant panel's suggested prompts (at most four are shown).
    suggested_prompts: list[str] = Field(default_factory=lambda: [
        "How do I request access to a system?", "What is the expense policy for travel?",
        "How do I rotate the staging database credentials?"], max_length=4)


@dataclass(frozen=True)
class SlackConfig:
    """What the Slack adapter is built from. A secret that was not set is None; one set to
    blanks is "" (and refused with its own sentence)."""

    bot_token: str | None
    signing_secret: str | None
    app_token: str | None
    api_url: str
    options: SlackSettings

    @property
    def markdown_block(self) -> bool:
        o = self.options
        return o.assistant if o.markdown_block is None else o.markdown_block


def config(settings: Settings) -> SlackConfig:
    def plain(secret: SecretStr | None) -> str | None:
        return None if secret is None else secret.get_secret_value()

    c: SlackCredentials = SPEC.credentials_of(settings)
    return SlackConfig(plain(c.bot_token), plain(c.signing_secret), plain(c.app_token),
                       c.api_url, SPEC.section_of(settings))


def follow_ups(c: SlackConfig) -> bool:
    return c.options.follow_ups_without_mention


def status(c: SlackConfig, place: Place) -> str:
    if c.bot_token is None:
        return "Slack: off (SIFT_SLACK_BOT_TOKEN is not set)"
    if c.app_token is not None:
        return "Slack: on, Socket Mode (SIFT_SLACK_APP_TOKEN is set; no public URL needed)"
    return f"Slack: on, HTTP events at {place.base_url}/slack/events"


def build(c: SlackConfig, around: Around) -> Endpoint | None:
    if c.bot_token is None:
        return None
    from bot.slack.app import build_slack_adapter  # bolt loads only for serving

    return build_slack_adapter(c, around)


# Channels: C… public, G… private, D… DM ids. People: users (U…/W…) and user groups (S…).
POLICY_IDS = PolicyIds(
    re.compile(r"^[CGD][A-Z0-9]{6,}$"), "a Slack channel id such as C0123ABCD",
    re.compile(r"^[UWS][A-Z0-9]{6,}$"), "a Slack user id (U…/W…) or user-group id (S…)")
SPEC = SurfaceSpec(PLATFORM, "slack", SlackSettings, config, build, status,
                   policy_ids=POLICY_IDS, credentials=SlackCredentials, follow_ups=follow_ups)
