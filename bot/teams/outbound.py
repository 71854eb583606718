"""Rendered replies to SDK activities: Markdown text, citation entities, the feedback loop."""

from __future__ import annotations

from microsoft_agents.activity import (
    Activity,
    ActivityTypes,
    AIEntity,
    ChannelAccount,
    ClientCitation,
    ClientCitationAppearance,
    InvokeResponse,
    Mention,
)
from microsoft_agents.activity.teams import (
    MessagingExtensionActionResponse,
    TaskModuleResponseBase,
)

from bot.teams.render import TeamsCitation, TeamsReply

AI_LABEL = "AIGeneratedContent"


def _client_citation(c: TeamsCitation) -> ClientCitation:
    return ClientCitation(position=c.position, appearance=ClientCitationAppearance(
        name=c.name, abstract=c.abstract, url=c.url, keywords=list(c.keywords) or None))


def to_activity(reply: TeamsReply) -> Activity:
    """One message activity: Markdown text, the feedback loop flag, one AI entity at most."""
    activity = Activity(type=ActivityTypes.message, text=reply.text, text_format="markdown")
    if reply.feedback:
        activity.channel_data = {"feedbackLoopEnabled": True}
    if reply.ai_generated or reply.citations:
        # Fields left unset stay off the wire: citations without the label carry no
        # additionalType at all.
        entity = AIEntity(id="", citation=[_client_citation(c) for c in reply.citations] or None)
        if reply.ai_generated:
            entity.additional_type = [AI_LABEL]
        activity.entities = [entity]
    return activity


def mention_activity(text: str, people: list[str]) -> Activity:
    """A message that calls `people` (Teams user or AAD ids): each `<at>id</at>` in `text`
    pings only with its mention entity beside it."""
    entities = [Mention(mentioned=ChannelAccount(id=p, name=p), text=f"<at>{p}</at>")
                for p in people]
    return Activity(type=ActivityTypes.message, text=text, text_format="markdown",
                    entities=entities)


def invoke_ok() -> Activity:
    """What Teams expects after `message/submitAction`: 200 with an empty JSON object."""
    return Activity(type=ActivityTypes.invoke_response, value=InvokeResponse(status=200, body={}))


def dialog_message(text: str) -> Activity:
    """The answer to a message action's `composeExtension/fetchTask`: a dialog showing one
    sentence (a task module of type "message")."""
    # The SDK's TaskModuleMessageResponse is not a TaskModuleResponseBase, which `task` takes:
    # the base, which allows extra fields, carries the message's `value`.
    body = MessagingExtensionActionResponse(task=TaskModuleResponseBase(type="message",
                                                                         value=text))
    return Activity(type=ActivityTypes.invoke_response, value=InvokeResponse(
        status=200, body=body.model_dump(mode="json", by_alias=True, exclude_none=True)))
