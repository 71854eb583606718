"""Confluence storage format (XHTML with ac:/ri: macros) to Markdown: code, panels, tables."""

from __future__ import annotations

from bs4 import BeautifulSoup, Tag

from sync.connectors.common.convert import DocumentParseError, html_to_markdown

# Macros whose body is prose worth indexing, shown as a quote with the macro's name.
_PANELS = {"info": "Info", "note": "Note", "warning": "Warning", "tip": "Tip", "panel": "",
           "expand": "", "details": "", "section": "", "column": "", "excerpt": ""}
_CODE = {"code", "noformat"}


def storage_to_markdown(storage: str) -> str:
    """The page body as Markdown; macros that carry no text (toc, children, jira) vanish."""
    if not storage.strip():
        raise DocumentParseError("the page body is empty")
    soup = BeautifulSoup(storage, "html.parser")
    for macro in reversed(soup.find_all("ac:structured-macro")):  # innermost first
        _replace_macro(soup, macro)
    for link in soup.find_all("ac:link"):
        _replace_link(soup, link)
    for task in soup.find_all("ac:task"):
        done = task.find("ac:task-status")
        text = task.find("ac:task-body")
        item = soup.new_tag("li")
        item.string = ("[x] " if done and done.get_text() == "complete" else "[ ] ") + (
            text.get_text(" ", strip=True) if text else "")
        task.replace_with(item)
    for tasks in soup.find_all("ac:task-list"):
        tasks.name = "ul"
    for noise in soup.find_all(["ac:image", "ac:emoticon", "ac:placeholder", "ri:attachment"]):
        noise.decompose()
    body = html_to_markdown(str(soup)).body.replace("\xa0", " ")
    if not body.strip():
        raise DocumentParseError("the page body has no text")
    return body


def _param(macro: Tag, name: str) -> str:
    for param in macro.find_all("ac:parameter", recursive=False):
        if param.get("ac:name") == name:
            return param.get_text(strip=True)
    return ""


def _replace_macro(soup: BeautifulSoup, macro: Tag) -> None:
    name = str(macro.get("ac:name") or "").lower()
    if name in _CODE:
        pre, code = soup.new_tag("pre"), soup.new_tag("code")
        language = _param(macro, "language")
        if language:
            code["class"] = f"language-{language}"
        plain = macro.find("ac:plain-text-body")
        code.string = plain.get_text() if plain else ""
        pre.append(code)
        macro.replace_with(pre)
        return
    rich = macro.find("ac:rich-text-body")
    if rich is None:
        macro.decompose()  # toc, children, jira issues, attachments: no text of their own
        return
    heading = _PANELS.get(name, "") or _param(macro, "title")
    if name not in _PANELS:
        rich.unwrap()  # an unknown macro with a body: keep the text, drop the frame
        macro.unwrap()
        return
    quote = soup.new_tag("blockquote")
    if heading:
        strong = soup.new_tag("strong")
        strong.string = f"{heading}:"
        para = soup.new_tag("p")
        para.append(strong)
        quote.append(para)
    for child in list(rich.children):
        quote.append(child.extract())
    macro.replace_with(quote)


def _replace_link(soup: BeautifulSoup, link: Tag) -> None:
    """A link to another page keeps its visible text (or the page's title)."""
    body = link.find(["ac:plain-text-link-body", "ac:link-body"])
    page = link.find("ri:page")
    text = body.get_text() if body else str(page.get("ri:content-title", "")) if page else ""
    link.replace_with(soup.new_string(text))
