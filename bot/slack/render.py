"""Slack Block Kit rendering of an Answer: mrkdwn sections, sources, notes, feedback buttons."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.render.notes import answer_notes, error_text
from bot.slack.mrkdwn import escape, link, safe_url, split_text, to_markdown, to_mrkdwn
from rag import messages
from rag.i18n import tr
from rag.markdown import parse
from rag.types import Answer, AnswerStatus, Citation

Block = dict[str, Any]  # Block Kit JSON: the platform's own format, built only here

SECTION_LIMIT = 3000  # characters of text in one section block
MARKDOWN_LIMIT = 12_000  # characters of every markdown block in one message
MAX_BLOCKS = 50  # blocks in one message
CONTEXT_LIMIT = 3000
FALLBACK_LIMIT = 3900  # the top-level `text`: notifications, search and thread history
FEEDBACK_ACTION = "answer_feedback"
FEEDBACK_BLOCK = "sift_feedback"
SHARE_ACTION = "share_answer"  # value: the interaction id of a private answer
HELP_ACTION = "ask_for_help"  # "Still need help?"
SAVE_ANSWER_ACTION = "save_as_answer"  # value: the ts of the person's reply offered to save
ACTIONS_BLOCK = "sift_actions"
VOTE_UP, VOTE_DOWN = "up", "down"


@dataclass(frozen=True)
class SlackMessage:
    """What chat.postMessage / chat.update take: fallback `text` and the blocks."""

    text: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class SlackStream:
    """A streamed answer: the Markdown appended to the stream, then blocks when it stops."""

    markdown: str
    blocks: tuple[Block, ...]


def section(text: str) -> Block:
    # verbatim: Slack must not turn bare names or URLs in the text into links or mentions
    return {"type": "section", "text": {"type": "mrkdwn", "text": text, "verbatim": True}}


def context(texts: Sequence[str]) -> Block:
    return {"type": "context",
            "elements": [{"type": "mrkdwn", "text": t, "verbatim": True} for t in texts[:10]]}


def feedback_block() -> Block:
    def button(emoji: str, value: str, label: str) -> dict[str, Any]:
        return {"text": {"type": "plain_text", "text": emoji, "emoji": True}, "value": value,
                "accessibility_label": label}

    return {"type": "context_actions", "block_id": FEEDBACK_BLOCK, "elements": [{
        "type": "feedback_buttons", "action_id": FEEDBACK_ACTION,
        "positive_button": button("👍", VOTE_UP, tr(messages.FEEDBACK_UP_LABEL)),
        "negative_button": button("👎", VOTE_DOWN, tr(messages.FEEDBACK_DOWN_LABEL))}]}


@dataclass(frozen=True)
class Buttons:
    """Extra buttons under an answer (see bot/chat/surface.py Delivery)."""

    share: bool = False
    share_blocked: str = ""
    help: bool = False


NO_BUTTONS = Buttons()


def actions_block(answer: Answer, buttons: Buttons) -> list[Block]:
    def button(label: str, action: str, value: str) -> dict[str, Any]:
        return {"type": "button", "action_id": action, "value": value,
                "text": {"type": "plain_text", "text": label}}

    elements = []
    if buttons.share and answer.interaction_id is not None:
        elements.append(button(tr(messages.SHARE_LABEL), SHARE_ACTION,
                               str(answer.interaction_id)))
    if buttons.help:
        elements.append(button(tr(messages.HELP_LABEL), HELP_ACTION,
                               str(answer.interaction_id or "")))
    blocks: list[Block] = []
    if buttons.share_blocked:
        blocks.append(context([escape(tr(buttons.share_blocked))]))
    if elements:
        blocks.append({"type": "actions", "block_id": ACTIONS_BLOCK, "elements": elements})
    return blocks


def citation_links(citations: Sequence[Citation]) -> dict[int, str]:
    return {c.n: c.url for c in citations if safe_url(c.url)}


def _bounded_lines(head: str, lines: Sequence[str], limit: int) -> str:
    text = head
    for line in lines:
        if len(text) + len(line) + 3 > limit:
            return text + "\n…"
        text += "\n" + line
    return text


def sources_block(citations: Sequence[Citation]) -> Block:
    lines = [f"[{c.n}] {link(c.url, c.title)}" for c in citations]
    return context([_bounded_lines(f"*{escape(tr(messages.SOURCES_HEADING))}*", lines,
                                   CONTEXT_LIMIT)])


def suggestions_block(suggestions: Sequence[Citation]) -> Block:
    lines = [f"• {link(c.url, c.title)}" for c in suggestions]
    return section(_bounded_lines(escape(tr(messages.NO_ANSWER_SUGGESTIONS)), lines, SECTION_LIMIT))


def fallback_text(mrkdwn: str) -> str:
    pieces = split_text(mrkdwn, FALLBACK_LIMIT)
    if not pieces:
        return ""
    return pieces[0] + (" …" if len(pieces) > 1 else "")


def render_notice(text: str) -> SlackMessage:
    """One plain sentence (a refusal, a thank-you, an error with its reference)."""
    body = escape(tr(text))
    return SlackMessage(body, (section(body),))


def render_call(mrkdwn: str) -> SlackMessage:
    """A message that calls people on purpose: its `<@U…>` / `<!subteam^S…>` stay live. Only
    Sift's own sentences with ids from a channel policy come here, never document text."""
    return SlackMessage(mrkdwn, (section(mrkdwn),))


def render_error(message: str, correlation_id: str) -> SlackMessage:
    return render_notice(messages.with_reference(message, correlation_id))


def _tail(answer: Answer, feedback: bool,
          buttons: Buttons = NO_BUTTONS) -> tuple[list[Block], list[Block]]:
    """Blocks before the notes (suggestions, sources) and after them (buttons, feedback)."""
    before = []
    if answer.status is AnswerStatus.NO_ANSWER and answer.suggestions:
        before.append(suggestions_block(answer.suggestions))
    if answer.citations:
        before.append(sources_block(answer.citations))
    return before, [*actions_block(answer, buttons), *([feedback_block()] if feedback else [])]


def markdown_block(markdown: str) -> Block | None:
    """Slack's `markdown` block (made for AI apps: Slack renders standard Markdown itself)
    when it renders what the answer needs; None for tables, which it does not render, and
    for text beyond its 12,000 characters."""
    if len(markdown) > MARKDOWN_LIMIT or any(t.type == "table_open" for t in parse(markdown)):
        return None
    return {"type": "markdown", "text": markdown}


def render_answer(answer: Answer, *, feedback: bool = True, buttons: Buttons = NO_BUTTONS,
                  markdown: bool = False) -> SlackMessage:
    """The whole answer as one message, within 3,000 characters a section and 50 blocks;
    `markdown`: in a `markdown` block where Slack renders all it needs (else mrkdwn)."""
    if answer.status is AnswerStatus.ERROR:
        return render_notice(error_text(answer))
    links = citation_links(answer.citations)
    body = to_mrkdwn(answer.text, links)
    block = markdown_block(to_markdown(answer.text, links)) if markdown else None
    sections = [block] if block else [section(p) for p in split_text(body, SECTION_LIMIT)]
    before, after = _tail(answer, feedback, buttons)
    notes = answer_notes(answer)
    room = MAX_BLOCKS - len(before) - len(after) - 1  # one context block kept for the notes
    if len(sections) > room:
        sections = sections[:room]
        notes.append(tr(messages.ANSWER_SHORTENED))
    note_blocks = [context([escape(n) for n in notes])] if notes else []
    return SlackMessage(fallback_text(body), (*sections, *before, *note_blocks, *after))


def streamable(answer: Answer) -> bool:
    """Only real answers are streamed; refusals and errors are posted at once."""
    return answer.status in (AnswerStatus.ANSWERED, AnswerStatus.DEGRADED)


def render_stream(answer: Answer, *, feedback: bool = True,
                  buttons: Buttons = NO_BUTTONS) -> SlackStream:
    markdown = to_markdown(answer.text, citation_links(answer.citations))
    before, after = _tail(answer, feedback, buttons)
    notes = answer_notes(answer)
    note_blocks = [context([escape(n) for n in notes])] if notes else []
    return SlackStream(markdown, (*before, *note_blocks, *after))


def live_markdown(text: str) -> str:
    """Stream Markdown for answer text shown while it is written: defused as in render_stream,
    but `[n]` stays plain, since which source it names is known only when the answer is done
    (the sources block at the end links each number)."""
    return to_markdown(text, {})
