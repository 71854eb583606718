"""A Teams message as Markdown: HTML bodies converted, mentions as names, cards and files named."""

from __future__ import annotations

import json
from typing import Any

from bs4 import BeautifulSoup

from sync.connectors.common.convert import html_to_markdown
from sync.connectors.teams_api import Message

CARDS = "application/vnd.microsoft.card."


def _card_texts(node: Any) -> list[str]:
    """The words of an Adaptive (or hero, thumbnail) card: its text, title and fact values."""
    if isinstance(node, list):
        return [t for item in node for t in _card_texts(item)]
    if not isinstance(node, dict):
        return []
    found = [str(node[k]) for k in ("title", "subtitle", "text") if isinstance(
        node.get(k), str) and node[k].strip()]
    if node.get("type") == "Fact" or {"title", "value"} <= node.keys():
        found.append(str(node.get("value") or ""))
    for key in ("body", "items", "columns", "facts", "actions", "content"):
        if not isinstance(node.get(key), str):
            found += _card_texts(node.get(key))
    return [f for f in found if f]


def cards(message: Message) -> list[str]:
    texts: list[str] = []
    for attachment in message.attachments:
        if attachment.kind.startswith(CARDS) and attachment.content:
            try:
                texts += _card_texts(json.loads(attachment.content))
            except ValueError:
                continue  # a card Graph could not give whole: its other parts still count
    return texts


def files(message: Message) -> list[str]:
    return [a.name for a in message.attachments if a.kind == "reference" and a.name]


def to_markdown(message: Message) -> str:
    """The message's words: its body (HTML converted; `<at id>` mentions as @Name), else
    the text of its cards; each shared file named."""
    if message.content_type.lower() == "html":
        soup = BeautifulSoup(message.html, "html.parser")
        names = dict(message.mentions)
        for tag in soup.find_all("at"):
            raw = str(tag.get("id") or "")
            name = names.get(int(raw)) if raw.isdigit() else None
            tag.replace_with(f"@{name or tag.get_text()}")
        for tag in soup.find_all("attachment"):  # where a file or card sits: named below
            tag.decompose()
        text = html_to_markdown(str(soup)).body.strip()
    else:
        text = message.html.strip()
    if not text:
        text = "\n".join(cards(message))
    return text + "".join(f"\n[file: {name}]" for name in files(message))
