"""The App Home tab: what Sift is, how to ask it, what it knows, the person's recent questions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.slack.mrkdwn import escape
from bot.slack.render import Block, context, section
from rag.i18n import tr

INTRO = ("*Sift answers questions from the company's knowledge base*, with numbered sources. "
         "It reads every candidate before it answers, and says plainly when the knowledge base "
         "does not cover a question.")
HOW_TO_ASK = ("*How to ask*\n• Mention me in a channel: `@Sift how do I rotate the staging "
              "credentials?`\n• Write to me here in Messages.\n• Type `/sift your question` in "
              "any channel for an answer only you see.\n• React 👍 or 👎 to an answer to tell "
              "me how I did.")
WHAT_I_KNOW = "*What I know*"
NO_SOURCES = "No sources are configured yet."
RECENT = "*Your recent questions*"
NOTHING_YET = "You haven't asked me anything yet."


def home_view(sources: Sequence[str], recent: Sequence[str]) -> dict[str, Any]:
    """The view for views.publish; `recent` are the person's latest questions, newest first."""
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Sift"}},
        section(tr(INTRO)), section(tr(HOW_TO_ASK)),
        section(tr(WHAT_I_KNOW) + "\n" + ("\n".join(f"• {escape(s)}" for s in sources)
                                         or tr(NO_SOURCES))),
    ]
    if recent:
        blocks.append(section(tr(RECENT) + "\n" +
                              "\n".join(f"• {escape(q[:150])}" for q in recent)))
    else:
        blocks.append(context([tr(NOTHING_YET)]))
    return {"type": "home", "blocks": blocks}


def suggested_prompts(prompts: Sequence[str]) -> list[dict[str, str]]:
    """assistant.threads.setSuggestedPrompts items: a short title and the message it sends."""
    return [{"title": p if len(p) <= 40 else p[:39] + "…", "message": p} for p in prompts[:4]]
