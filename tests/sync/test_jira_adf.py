"""Atlassian Document Format to Markdown, node type by node type (table-driven)."""

from __future__ import annotations

from typing import Any

import pytest

from sync.connectors.common.convert import DocumentParseError
from sync.connectors.jira_adf import adf_to_markdown


def doc(*content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "doc", "version": 1, "content": list(content)}


def text(value: str, *marks: str, href: str = "") -> dict[str, Any]:
    node: dict[str, Any] = {"type": "text", "text": value}
    if marks:
        node["marks"] = [{"type": m, **({"attrs": {"href": href}} if m == "link" else {})}
                         for m in marks]
    return node


def para(*content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "paragraph", "content": list(content)}


def item(*content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "listItem", "content": list(content)}


@pytest.mark.parametrize(("node", "markdown"), [
    (para(text("Restart "), text("now", "strong"), text(" or "), text("later", "em")),
     "Restart **now** or _later_"),
    (para(text("run "), text("make", "code"), text(", see "), text("docs", "link",
                                                                   href="https://x.test")),
     "run `make`, see [docs](https://x.test)"),
    ({"type": "heading", "attrs": {"level": 3}, "content": [text("Steps")]}, "### Steps"),
    ({"type": "bulletList", "content": [item(para(text("one"))), item(para(text("two")), {
        "type": "bulletList", "content": [item(para(text("inner")))]})]},
     "- one\n- two\n\n  - inner"),
    ({"type": "orderedList", "attrs": {"order": 3}, "content": [item(para(text("c"))),
                                                                item(para(text("d")))]},
     "3. c\n4. d"),
    ({"type": "codeBlock", "attrs": {"language": "bash"}, "content": [text("make deploy")]},
     "```bash\nmake deploy\n```"),
    ({"type": "table", "content": [
        {"type": "tableRow", "content": [{"type": "tableHeader", "content": [para(text("a"))]},
                                         {"type": "tableHeader", "content": [para(text("b"))]}]},
        {"type": "tableRow", "content": [{"type": "tableCell", "content": [para(text("1"))]},
                                         {"type": "tableCell", "content": [para(text("2"))]}]}]},
     "| a | b |\n| --- | --- |\n| 1 | 2 |"),
    (para({"type": "mention", "attrs": {"id": "5b10", "text": "@Mia"}}, text(" approved "),
          {"type": "status", "attrs": {"text": "DONE", "color": "green"}}),
     "@Mia approved [DONE]"),
    ({"type": "panel", "attrs": {"panelType": "info"}, "content": [para(text("Ask in #ops."))]},
     "> Ask in #ops."),
    ({"type": "mediaSingle", "content": [{"type": "media", "attrs": {"id": "f1"}}]}, ""),
    ({"type": "someFutureNode", "content": [para(text("still read"))]}, "still read"),
])
def test_nodes(node: dict[str, Any], markdown: str) -> None:
    assert adf_to_markdown(doc(node)) == markdown


@pytest.mark.parametrize("body", ["plain wiki text", {"type": "paragraph"}, None,
                                  {"type": "doc", "content": [{"text": "no type"}]}])
def test_what_is_not_adf_is_refused(body: Any) -> None:
    with pytest.raises(DocumentParseError):
        adf_to_markdown(body)
