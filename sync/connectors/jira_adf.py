"""Atlassian Document Format (Jira Cloud's descriptions and comments) as Markdown."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sync.connectors.common.convert import DocumentParseError, markdown_table

# Hand-written, not a PyPI converter: the ADF-to-Markdown packages there are months old with
# one maintainer each, and ADF is a small documented JSON tree (as Notion's blocks are, see
# notion_blocks.py): one function per node type, unknown types read for their text.
Render = Callable[[dict[str, Any], int], str]


def adf_to_markdown(doc: Any) -> str:
    """A `{"type": "doc", "version": 1, "content": [...]}` document as Markdown; anything else
    raises DocumentParseError (an API that answered wiki markup, a truncated body)."""
    if not isinstance(doc, dict) or doc.get("type") != "doc" or not isinstance(
            doc.get("content"), list):
        raise DocumentParseError("the body is not Atlassian Document Format (no doc node)")
    return _blocks(doc["content"], 0).strip()


def _blocks(nodes: list[Any], depth: int) -> str:
    parts = [_node(n, depth) for n in nodes]
    return "\n\n".join(p for p in parts if p.strip())


def _inline(nodes: Any) -> str:
    return "".join(_node(n, 0) for n in nodes or ())


def _node(node: Any, depth: int) -> str:
    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        raise DocumentParseError("an ADF node without a type")
    render = RENDER.get(node["type"])
    if render is not None:
        return render(node, depth)
    content = node.get("content")  # an extension or a node type newer than this table
    return _blocks(content, depth) if isinstance(content, list) else _text(node, depth)


def _attr(node: dict[str, Any], key: str, default: Any = "") -> Any:
    attrs = node.get("attrs")
    return attrs.get(key, default) if isinstance(attrs, dict) else default


def _text(node: dict[str, Any], _: int) -> str:
    text = str(node.get("text") or "")
    for mark in node.get("marks") or ():
        kind = mark.get("type") if isinstance(mark, dict) else None
        if kind == "code":
            text = f"`{text}`"
        elif kind == "strong":
            text = f"**{text}**"
        elif kind == "em":
            text = f"_{text}_"
        elif kind == "strike":
            text = f"~~{text}~~"
        elif kind == "link":
            text = f"[{text}]({_attr(mark, 'href')})"
    return text


def _heading(node: dict[str, Any], _: int) -> str:
    level = _attr(node, "level", 1)
    return "#" * (level if isinstance(level, int) and 1 <= level <= 6 else 1) + " " + _inline(
        node.get("content"))


def _list(node: dict[str, Any], _: int) -> str:
    """Items under their marker; an item's later lines (a nested list) indented under it."""
    ordered = node["type"] == "orderedList"
    start = _attr(node, "order", 1) if ordered else 1
    lines = []
    for i, item in enumerate(node.get("content") or ()):
        marker = f"{(start if isinstance(start, int) else 1) + i}." if ordered else "-"
        body = _blocks(item.get("content") or [], 0) if isinstance(item, dict) else ""
        first, *rest = body.split("\n")
        pad = " " * (len(marker) + 1)
        lines.append(f"{marker} {first}" + "".join(
            f"\n{pad}{line}" if line.strip() else "\n" for line in rest))
    return "\n".join(lines)


def _code(node: dict[str, Any], _: int) -> str:
    language = _attr(node, "language") or ""
    return f"```{language}\n{_inline(node.get('content'))}\n```"


def _quote(node: dict[str, Any], depth: int) -> str:
    return "\n".join("> " + line for line in _blocks(node.get("content") or [], depth)
                     .split("\n"))


def _table(node: dict[str, Any], depth: int) -> str:
    rows = [[_blocks(cell.get("content") or [], depth).replace("\n\n", " ")
             for cell in row.get("content") or () if isinstance(cell, dict)]
            for row in node.get("content") or () if isinstance(row, dict)]
    rows = [r for r in rows if r]
    return markdown_table(rows) if rows else ""


def _date(node: dict[str, Any], _: int) -> str:
    try:
        stamp = int(_attr(node, "timestamp", "0")) / 1000
    except (TypeError, ValueError):
        return ""
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d")


def _expand(node: dict[str, Any], depth: int) -> str:
    title = _attr(node, "title")
    inner = _blocks(node.get("content") or [], depth)
    return f"**{title}**\n\n{inner}" if title else inner


RENDER: dict[str, Render] = {
    "paragraph": lambda n, d: _inline(n.get("content")),
    "text": _text,
    "hardBreak": lambda n, d: "  \n",
    "heading": _heading,
    "bulletList": _list,
    "orderedList": _list,
    "codeBlock": _code,
    "blockquote": _quote,
    "panel": _quote,
    "rule": lambda n, d: "---",
    "table": _table,
    "mention": lambda n, d: str(_attr(n, "text")),
    "emoji": lambda n, d: str(_attr(n, "text") or _attr(n, "shortName")),
    "status": lambda n, d: f"[{_attr(n, 'text')}]",
    "inlineCard": lambda n, d: str(_attr(n, "url")),
    "blockCard": lambda n, d: str(_attr(n, "url")),
    "date": _date,
    "expand": _expand,
    "nestedExpand": _expand,
    "mediaSingle": lambda n, d: "",  # pictures and files: nothing a reader could search
    "mediaGroup": lambda n, d: "",
}
