"""The console's steering forms: channel policies (each field checked), document overrides."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from bot import surfaces
from bot.admin.console import KEY, PREFIX, audit, render, require_admin
from bot.chat.policy import (
    ChannelPolicy,
    Known,
    PolicyError,
    Respond,
    check_channel,
    policy_from,
    policy_settings,
    validate,
)
from storage.channel_policies import ChannelPolicyRepository, StoredPolicy
from storage.overrides import KINDS, OverrideRepository

log = logging.getLogger(__name__)
LISTS = ("sources", "escalate_to", "audience", "experts")
SWITCHES = ("only_when_confident", "private_answers", "follow_ups", "enabled")


def _known(request: web.Request) -> Known:
    return surfaces.policy_names(request.app[KEY].settings)


def _stored(request: web.Request, platform: str, channel: str) -> ChannelPolicy | None:
    found = ChannelPolicyRepository(request.app[KEY].db).get(platform, channel)
    return None if found is None else policy_from(found.platform, found.channel, found.label,
                                                   found.settings)


def _form_values(policy: ChannelPolicy) -> dict[str, Any]:
    values = {"platform": policy.platform, "channel": policy.channel, "label": policy.label,
              "respond": policy.respond.value}
    values.update({name: ", ".join(getattr(policy, name)) for name in LISTS})
    values.update({name: getattr(policy, name) for name in SWITCHES})
    values["holdout"] = f"{policy.holdout:g}"
    return values


def described(stored: StoredPolicy) -> list[str]:
    """A stored policy in words, for the Channels list: what it changes from the defaults."""
    policy = policy_from(stored.platform, stored.channel, stored.label, stored.settings)
    said = [f"sources: {', '.join(policy.sources)}" if policy.sources else "all sources",
            "answers every question" if policy.respond is Respond.QUESTIONS
            else "answers when mentioned"]
    if policy.only_when_confident:
        said.append("only when confident")
    if policy.escalate_to:
        said.append(f"escalates to {', '.join(policy.escalate_to)}")
    if policy.experts:
        said.append(f"approves answers from {', '.join(policy.experts)}")
    if policy.private_answers:
        said.append("private answers")
    if not policy.follow_ups:
        said.append("thread replies are not follow-ups")
    if policy.audience:
        said.append(f"audience: {', '.join(policy.audience)}")
    if policy.holdout:
        said.append(f"holdout {policy.holdout:.0%}")
    if not policy.enabled:
        said.append("disabled")
    return said


def _as_audit(stored: StoredPolicy | None) -> dict[str, Any] | None:
    return None if stored is None else {"label": stored.label, **stored.settings}


async def edit_form(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    platform = request.query.get("platform", "slack")
    channel = request.query.get("channel", "")
    policy = await asyncio.to_thread(_stored, request, platform, channel) if channel else None
    values = _form_values(policy or ChannelPolicy(platform, channel))
    return render(request, "channel_form.html", values=values, errors={},
                  known=_known(request), new=policy is None,
                  platforms=surfaces.policy_platforms())


def _from_form(form: Any) -> ChannelPolicy:
    def listed(name: str) -> tuple[str, ...]:
        return tuple(p.strip() for p in str(form.get(name, "")).split(",") if p.strip())

    respond = str(form.get("respond", "mention"))
    if respond not in {r.value for r in Respond}:
        raise PolicyError("`respond` is either mention or questions.", "respond")
    policy = ChannelPolicy(str(form.get("platform", "")).strip(),
                           str(form.get("channel", "")).strip(),
                           label=str(form.get("label", "")).strip(), respond=Respond(respond))
    changes: dict[str, Any] = {name: listed(name) for name in LISTS}
    changes.update({name: form.get(name) == "on" for name in SWITCHES})
    try:
        changes["holdout"] = float(str(form.get("holdout", "") or 0))
    except ValueError:
        raise PolicyError("`holdout` is a share between 0 and 0.5, e.g. 0.05.",
                          "holdout") from None
    return replace(policy, **changes)


async def save(request: web.Request) -> web.StreamResponse:
    """Create or change a policy; a refused field comes back marked, with the sentence why."""
    require_admin(request)
    form = await request.post()
    try:
        policy = _from_form(form)
        check_channel(policy.platform, policy.channel, surfaces.policy_platforms())
        policy = validate(policy, _known(request))
    except PolicyError as exc:
        values: dict[str, Any] = {k: str(form.get(k, "")) for k in (
            "platform", "channel", "label", "respond", "holdout", *LISTS)}
        values.update({name: form.get(name) == "on" for name in SWITCHES})
        return render(request, "channel_form.html", 400, values=values,
                      errors={exc.field: exc.user_message}, known=_known(request), new=False,
                      platforms=surfaces.policy_platforms())
    repository = ChannelPolicyRepository(request.app[KEY].db)
    before = await asyncio.to_thread(repository.get, policy.platform, policy.channel)
    after = {"label": policy.label, **policy_settings(policy)}
    await asyncio.to_thread(repository.put, policy.platform, policy.channel, policy.label,
                            policy_settings(policy))
    log.info("console: an admin saved the policy of %s", policy.key)
    await audit(request, "policy_saved", f"{policy.platform}:{policy.channel}",
                before=_as_audit(before), after=after)
    raise web.HTTPSeeOther(f"{PREFIX}/channels?saved={policy.platform}:{policy.channel}")


async def remove(request: web.Request) -> web.StreamResponse:
    require_admin(request)
    form = await request.post()
    platform, channel = str(form.get("platform", "")), str(form.get("channel", ""))
    repository = ChannelPolicyRepository(request.app[KEY].db)
    before = await asyncio.to_thread(repository.get, platform, channel)
    await asyncio.to_thread(repository.remove, platform, channel)
    log.info("console: an admin removed the policy of %s:%s", platform, channel)
    if before is not None:
        await audit(request, "policy_removed", f"{platform}:{channel}",
                    before=_as_audit(before))
    raise web.HTTPSeeOther(f"{PREFIX}/channels?removed={platform}:{channel}")


async def override(request: web.Request) -> web.StreamResponse:
    """Pin, boost, demote or hide one document, or reset it (the same as `sift docs`)."""
    require_admin(request)
    form = await request.post()
    doc_id, kind = str(form.get("doc_id", "")).strip(), str(form.get("kind", ""))
    repository = OverrideRepository(request.app[KEY].db)
    found = (await asyncio.to_thread(repository.for_documents, [doc_id])).get(doc_id)
    before = None if found is None else {"kind": found.kind, "set_by": found.set_by}
    if kind == "reset":
        await asyncio.to_thread(repository.reset, doc_id)
    elif kind in KINDS and doc_id:
        await asyncio.to_thread(repository.set, doc_id, kind, set_by="console")
    else:
        raise web.HTTPBadRequest(text=f"Choose one of {', '.join((*KINDS, 'reset'))} for a "
                                 "document.")
    log.info("console: an admin set %s on document %s", kind, doc_id)
    await audit(request, "override", f"document {doc_id}", before=before,
                after=None if kind == "reset" else {"kind": kind})
    back = str(form.get("back", ""))
    back = back if back.startswith(f"{PREFIX}/documents") else f"{PREFIX}/documents"
    done = urlencode({"set": kind, "doc": doc_id})
    raise web.HTTPSeeOther(f"{back}{'&' if '?' in back else '?'}{done}")
