"""GitHub items as documents: files of the default branch, Discussions, issues; their ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pathspec

from sync.connectors.base import DocumentFailure, Fetched, SourceDocument
from sync.connectors.common.convert import (
    DocumentParseError,
    as_datetime,
    decode_text,
    first_heading,
    split_front_matter,
)
from sync.connectors.common.files import file_to_markdown
from sync.connectors.github_api import Repo

TEXT = (".md", ".markdown", ".mdx", ".txt", ".rst")
Access = tuple[tuple[str, ...], tuple[str, ...]]


def file_id(repo: str, path: str) -> str:
    return f"{repo}:{path}"


def wiki_id(repo: str, path: str) -> str:
    return f"{repo}.wiki:{path}"


def discussion_id(repo: str, number: int) -> str:
    return f"{repo}#discussion-{number}"


def issue_id(repo: str, number: int) -> str:
    return f"{repo}#issue-{number}"


@dataclass(frozen=True)
class DocId:
    """A parsed document id: its repository, kind (file, discussion, issue) and path/number."""

    repo: str
    kind: str
    key: str

    @classmethod
    def parse(cls, doc_id: str) -> DocId | None:
        repo, hash_, rest = doc_id.partition("#")
        if hash_:
            kind, _, number = rest.partition("-")
            return cls(repo, kind, number) if kind in ("discussion", "issue") and \
                number.isdigit() and repo.count("/") == 1 else None
        repo, colon, path = doc_id.partition(":")
        if not colon or not path or repo.count("/") != 1 or any(
                part in ("", ".", "..") for part in path.split("/")):
            return None  # a path that could climb out of the repository's contents
        return cls(repo[:-5], "wiki", path) if repo.endswith(".wiki") else cls(repo, "file", path)


class Selection:
    """Which files are documents: `.gitignore`-style `paths` and the file name's extension."""

    def __init__(self, paths: Sequence[str], extensions: Sequence[str]) -> None:
        self.spec = pathspec.PathSpec.from_lines("gitignore", paths)
        self.extensions = tuple(e.lower() for e in extensions)

    def matches(self, path: str) -> bool:
        return path.lower().endswith(self.extensions) and self.spec.match_file(path)


def file_document(repo: Repo, path: str, data: bytes, access: Access) -> Fetched:
    folder = path.split("/", 1)[0] if "/" in path else ""
    return _text(file_id(repo.full_name, path), f"{repo.full_name}/{path}", data,
                 f"{repo.html_url}/blob/{repo.branch}/{path}",
                 (repo.full_name.split("/")[1], folder), "file", repo, access)


def wiki_document(repo: Repo, path: str, data: bytes, access: Access) -> Fetched:
    """A wiki page: its file name without the extension is the page's name and address."""
    page = path.rsplit(".", 1)[0]
    return _text(wiki_id(repo.full_name, path), f"{repo.full_name} wiki page {path}", data,
                 f"{repo.html_url}/wiki/{page}", (repo.full_name.split("/")[1], "wiki"),
                 "wiki", repo, access, title=page.rsplit("/", 1)[-1].replace("-", " "))


def _text(doc_id: str, where: str, data: bytes, url: str, tags: tuple[str, ...],
          doc_type: str, repo: Repo, access: Access, title: str = "") -> Fetched:
    name = where.rsplit("/", 1)[-1]
    try:
        if name.lower().endswith(TEXT):
            text = decode_text(data)
            parsed = split_front_matter(text) if name.lower().endswith(TEXT[:3]) else None
            body, meta = (parsed.body, parsed.meta) if parsed else (text, {})
        else:
            converted = file_to_markdown(data, name)
            body, meta = converted.body, converted.meta
    except DocumentParseError as exc:
        return DocumentFailure(doc_id, f"{where}: {exc}")
    body = body.strip() + "\n"
    if not body.strip():
        return DocumentFailure(doc_id, f"{where}: the file has no text")
    return SourceDocument(
        doc_id=doc_id, title=str(meta.get("title") or title or first_heading(body) or name),
        body=body, url=url, doc_type=doc_type, tags=tuple(t for t in tags if t),
        subtype=repo.full_name, access=access[0], warnings=access[1])


def _login(item: Any) -> str:
    who = item.get("author") or item.get("user") if isinstance(item, dict) else None
    return str(who.get("login") or "") if isinstance(who, dict) else ""


def discussion_document(repo: Repo, node: dict[str, Any], access: Access) -> Fetched:
    number = int(node.get("number") or 0)
    doc_id, title = discussion_id(repo.full_name, number), str(node.get("title") or number)
    body, answer = node.get("body"), node.get("answer")
    try:
        if not isinstance(body, str):
            raise DocumentParseError("the discussion has no body")
        updated = as_datetime(node.get("updatedAt"), "updatedAt")
        created = as_datetime(node.get("createdAt"), "createdAt")
    except DocumentParseError as exc:
        return DocumentFailure(doc_id, f"{repo.full_name} discussion #{number} ({title}): "
                               f"{exc}")
    text = f"# {title}\n\n{body.strip()}\n"
    authors = [_login(node)]
    if isinstance(answer, dict) and isinstance(answer.get("body"), str):
        text += f"\n## Accepted answer\n\n{answer['body'].strip()}\n"
        authors.append(_login(answer))
    given = node.get("category")
    category: dict[str, Any] = given if isinstance(given, dict) else {}
    labels = [str(n.get("name")) for n in (node.get("labels") or {}).get("nodes") or ()
              if isinstance(n, dict) and n.get("name")]
    return SourceDocument(
        doc_id=doc_id, title=title, body=text, url=str(node.get("url") or ""),
        tags=tuple(dict.fromkeys(t for t in (str(category.get("name") or ""), *labels) if t)),
        authors=tuple(dict.fromkeys(a for a in authors if a)), doc_type="discussion",
        subtype=repo.full_name, published_at=created, updated_at=updated,
        access=access[0], warnings=access[1])


def issue_document(repo: Repo, issue: dict[str, Any], comments: list[dict[str, Any]],
                   access: Access) -> Fetched:
    number = int(issue.get("number") or 0)
    doc_id, title = issue_id(repo.full_name, number), str(issue.get("title") or number)
    try:
        updated = as_datetime(issue.get("updated_at"), "updated_at")
        created = as_datetime(issue.get("created_at"), "created_at")
    except DocumentParseError as exc:
        return DocumentFailure(doc_id, f"{repo.full_name} issue #{number} ({title}): {exc}")
    parts = [f"# {title}", str(issue.get("body") or "").strip()]
    for comment in comments:
        parts.append(f"## Comment by {_login(comment) or 'someone'}\n\n"
                     f"{str(comment.get('body') or '').strip()}")
    labels = [str(lb.get("name")) for lb in issue.get("labels") or ()
              if isinstance(lb, dict) and lb.get("name")]
    return SourceDocument(
        doc_id=doc_id, title=f"#{number} {title}",
        body="\n\n".join(p for p in parts if p) + "\n", url=str(issue.get("html_url") or ""),
        tags=tuple(dict.fromkeys((str(issue.get("state") or ""), *labels))), doc_type="issue",
        authors=tuple(a for a in (_login(issue),) if a), subtype=repo.full_name,
        published_at=created, updated_at=updated, access=access[0], warnings=access[1])
