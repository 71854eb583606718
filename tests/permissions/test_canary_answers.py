"""The answers loop's canary: an answer captured in a private Slack channel and approved is
used in that channel only; another channel, a non-member's DM and the public never see it."""

from __future__ import annotations

import json

import pytest

from storage.models import AnswerDraft, Interaction
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_payloads import (
    BOT_USER,
    CHANNEL,
    DM,
    USER,
    app_mention,
    message,
    next_event_id,
    reaction,
)
from tests.permissions.cli_canary import sift
from tests.scenarios.conftest import make_served  # noqa: F401 (a fixture)
from tests.scenarios.sift_cli import cli_settings
from tests.scenarios.slack_stack import Serve, SlackSift
from tests.scenarios.stack import corpus  # noqa: F401 (a fixture)

pytestmark = pytest.mark.weaviate

VAULT, EXPERT, EVE = "G0VAULT01", "U0DANA", "U0EVE"
MARK = "VAULTMARK7731"
QUESTION = "Which door code opens the Lisbon server room?"
REPLY = f"The Lisbon server room door code is {MARK}; it changes on the first Monday."
Q_TS, R_TS = "1764700000.000100", "1764700300.000200"


async def ask_in(s: SlackSift, channel: str, user: str, ts: str) -> str:
    """@Sift in `channel` (DM: a direct message); what its answer showed."""
    before = len(s.slack.calls_to("chat.postMessage"))
    s.slack.add_message(channel, user, f"<@{BOT_USER}> {QUESTION}", ts)
    if channel == DM:
        payload = message(QUESTION, ts=ts, user=user, channel=DM, channel_type="im",
                          event_id=next_event_id())
    else:
        payload = app_mention(f"<@{BOT_USER}> {QUESTION}", ts=ts, user=user, channel=channel,
                              event_id=next_event_id())
    assert (await s.driver.event(payload)).status == 200
    posted = (await s.slack.wait_for("chat.postMessage", before + 1))[before]
    assert posted.args["channel"] == channel
    return json.dumps([posted.args.get("text"), posted.args.get("blocks")])


def echo_mark(prompt: str) -> str:
    """Claude repeating the marker when an excerpt it was given holds it."""
    return f"The code is {MARK} [1]." if MARK in prompt else "See the procedure [1]."


async def test_a_private_channels_answer_stays_in_that_channel(
        make_served: Serve, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.answer_from_prompt = echo_mark
    s = await make_served()
    s.slack.add_channel(VAULT, "vault", private=True, members=[USER, EXPERT])
    s.slack.add_channel(CHANNEL, "it-help", members=[USER, EXPERT, EVE])
    s.slack.add_user(EXPERT, name="dana")
    first = await ask_in(s, VAULT, USER, Q_TS)
    assert MARK not in first
    await s.rows(Interaction, 1, status="no_answer")
    s.slack.add_message(VAULT, EXPERT, REPLY, R_TS, Q_TS)
    await s.driver.event(message(REPLY, ts=R_TS, thread_ts=Q_TS, user=EXPERT, channel=VAULT,
                                 channel_type="group", event_id=next_event_id()))
    await s.driver.event(reaction("white_check_mark", R_TS, item_user=EXPERT, channel=VAULT,
                                  event_id=next_event_id()))
    [draft] = await s.rows(AnswerDraft, 1)
    assert (draft.channel_kind, draft.access) == \
        ("private", [f"slack:channel:{VAULT}", f"sift:channel:slack:{VAULT}"])
    with cli_settings(s.sift, monkeypatch):
        code, out, err = await sift("answers", "approve", str(draft.id), "--json")
        assert code == 0, out + err
        assert json.loads(out)["reasked"]["outcome"] == "answered"  # in the vault, as asked
        code, public, err = await sift("ask", "--json", QUESTION)
        assert code == 0 and MARK not in public, public + err
    # The member, in the vault: answered from the entry.
    assert MARK in await ask_in(s, VAULT, USER, "1764800000.000100")
    # The same member in a public channel, everyone in it reading: not there.
    assert MARK not in await ask_in(s, CHANNEL, USER, "1764800100.000100")
    # A non-member's direct message, and the member's own (no source lists the vault, so
    # Sift cannot check their membership there): neither.
    assert MARK not in await ask_in(s, DM, EVE, "1764800200.000100")
    assert MARK not in await ask_in(s, DM, USER, "1764800300.000100")
    await s.driver.settle()
    for call in s.slack.calls:
        if call.args.get("channel") != VAULT:
            assert MARK not in json.dumps(call.args), call.method
