"""Notion blocks to Markdown: headings, lists, to-dos, code, quotes, callouts, toggles, tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sync.connectors.common.convert import DocumentParseError

Block = Mapping[str, Any]
# Children of a block id, already fetched (the connector walks `has_children` first).
Children = Mapping[str, Sequence[Block]]
_PREFIX = {"heading_1": "# ", "heading_2": "## ", "heading_3": "### ", "quote": "> ",
           "bulleted_list_item": "- ", "toggle": "- ", "paragraph": ""}
_SKIPPED = {"divider", "image", "video", "file", "pdf", "embed", "bookmark", "link_preview",
            "table_of_contents", "breadcrumb", "column_list", "column", "synced_block",
            "child_database", "unsupported", "audio", "equation", "link_to_page"}


def rich_text(items: Any) -> str:
    """Notion rich text as Markdown: bold, italic, inline code and links kept."""
    parts = []
    for item in items or ():
        text = str(item.get("plain_text") or "")
        marks = item.get("annotations") or {}
        if marks.get("code"):
            text = f"`{text}`"
        if marks.get("bold"):
            text = f"**{text}**"
        if marks.get("italic"):
            text = f"*{text}*"
        if item.get("href"):
            text = f"[{text}]({item['href']})"
        parts.append(text)
    return "".join(parts)


def _payload(block: Block) -> Mapping[str, Any]:
    kind = block.get("type")
    payload = block.get(kind) if isinstance(kind, str) else None
    if not isinstance(payload, Mapping):
        raise DocumentParseError(f"block {block.get('id', '?')} has no {kind!r} content")
    return payload


def _table(block: Block, children: Children) -> list[str]:
    rows = [[rich_text(cell).replace("|", "\\|") for cell in _payload(row).get("cells", [])]
            for row in children.get(str(block["id"]), ())]
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    return lines + ["| " + " | ".join(r) + " |" for r in rows[1:]]


def _line(block: Block, number: int) -> str:
    kind, payload = str(block["type"]), _payload(block)
    text = rich_text(payload.get("rich_text"))
    if kind == "to_do":
        return ("- [x] " if payload.get("checked") else "- [ ] ") + text
    if kind == "numbered_list_item":
        return f"{number}. {text}"
    if kind == "callout":
        icon = (payload.get("icon") or {}).get("emoji") or ""
        return "> " + f"{icon} {text}".strip()
    if kind == "code":
        language = str(payload.get("language") or "").replace("plain text", "")
        code = "".join(str(i.get("plain_text", "")) for i in payload.get("rich_text") or ())
        return f"```{language}\n{code}\n```"
    if kind == "child_page":
        return f"## {payload.get('title', '')}"
    return _PREFIX.get(kind, "") + text


def blocks_to_markdown(blocks: Sequence[Block], children: Children, depth: int = 0) -> str:
    """Blocks (and their fetched children, indented under list items) as Markdown."""
    out: list[str] = []
    number, indent = 0, "  " * depth
    for block in blocks:
        kind = block.get("type")
        number = number + 1 if kind == "numbered_list_item" else 0
        if kind in _SKIPPED:
            continue
        if kind == "table":
            out.append("\n".join(_table(block, children)))
            continue
        if not isinstance(kind, str) or "id" not in block:
            raise DocumentParseError(f"a block without a type or id: {str(block)[:80]}")
        out.append(indent + _line(block, number).replace("\n", "\n" + indent))
        nested = children.get(str(block["id"]), ())
        if nested:
            listy = kind in ("bulleted_list_item", "numbered_list_item", "to_do", "toggle")
            out.append(blocks_to_markdown(nested, children, depth + 1 if listy else depth))
    return "\n\n".join(p for p in out if p.strip())
