"""The http connector: a knowledge platform's paginated REST/JSON API mapped to documents."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote, urljoin

import httpx
from pydantic import Field, SecretStr

from rag.errors import ConfigError, SyncError
from sync.connectors.base import (
    ConnectorSpec,
    DocumentFailure,
    DocumentGone,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.common.convert import (
    DocumentParseError,
    Parsed,
    as_datetime,
    as_tuple,
    html_to_markdown,
    read_access,
)
from sync.connectors.common.http_client import JsonClient, decode_json
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.http_push import SignedWebhookReceiver
from sync.push import DEFAULT_TOLERANCE_S

# SourceDocument field -> key (dotted path) in the platform's JSON; `fields` overrides these.
DEFAULT_FIELDS = {
    "doc_id": "id", "title": "title", "body": "body", "url": "url", "tags": "tags",
    "authors": "authors", "channels": "channels", "doc_type": "doc_type",
    "subtype": "subtype", "language": "language", "published_at": "published_at",
    "updated_at": "updated_at", "access": "access",
}
GONE, DENIED = frozenset({404, 410}), frozenset({401, 403})
_HTML = re.compile(r"^\s*<(?:!doctype|html|body|p|div|h[1-6]|ul|ol|table|section|article|"
                   r"span|br|pre|blockquote)\b", re.I)


@dataclass(frozen=True)
class HttpConfig:
    base_url: str
    token: str | None = None
    list_path: str = "/articles"
    ids_path: str = "/articles/ids"
    items_key: str = "items"
    next_key: str = "next"
    cursor_param: str = "cursor"
    page_param: str = ""  # set (e.g. "page") for numbered pages instead of next/cursor
    updated_since_param: str = "updated_since"
    page_size: int = 100
    page_size_param: str = "limit"
    body_format: str = "auto"  # "auto", "html" or "markdown"
    fields: Mapping[str, str] = field(default_factory=dict)
    retry: RetryKnobs = field(default_factory=RetryKnobs)
    default_access: tuple[str, ...] = ("public",)  # for items without an access field
    item_path: str = ""  # e.g. "/articles/{id}": one item by id (pushes sync by id with it)
    label: str = "The knowledge platform"  # starts every error sentence: "Source 'kb' (http)"


def pick(item: Any, path: str) -> Any:
    """A dotted path into JSON; through a list it collects from every element."""
    value = item
    for key in path.split("."):
        if isinstance(value, list):
            value = [v.get(key) for v in value if isinstance(v, dict)]
        elif isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


class HttpConnector:
    cheap_ids = False  # the id listing pages through the whole platform: full passes prune

    def __init__(self, config: HttpConfig) -> None:
        self.config = config
        self.fields = {**DEFAULT_FIELDS, **config.fields}

    def _client(self) -> httpx.AsyncClient:
        c = self.config
        headers = {"Accept": "application/json", "User-Agent": "sift-sync"}
        if c.token:
            headers["Authorization"] = f"Bearer {c.token}"
        return httpx.AsyncClient(base_url=c.base_url.rstrip("/") + "/", headers=headers,
                                 timeout=c.retry.timeout_s, follow_redirects=True)

    def _json(self, http: httpx.AsyncClient) -> JsonClient:
        return self.config.retry.client(http, label=self.config.label)

    async def _pages(self, path: str, params: dict[str, Any]) -> AsyncIterator[list[Any]]:
        """The item lists of every page, following next links, cursors or page numbers."""
        c = self.config
        params = {**params, c.page_size_param: c.page_size} if c.page_size_param else params
        url = path.lstrip("/")
        page, fullest = 1, 0
        previous: list[Any] | None = None
        followed: set[str] = set()
        async with self._client() as http:
            client = self._json(http)
            while True:
                if c.page_param:
                    params[c.page_param] = page
                # A next link carries its own query; httpx would drop it for any params dict.
                response = await client.get(url, params or None)
                body = decode_json(response)
                items = _items(body, c.items_key, response)
                yield items
                follow = _next(body, c.next_key, response)
                if c.page_param:
                    # A platform may cap the page size below what we ask for, so only a page
                    # shorter than one it already sent (or an empty one) is the last: stopping
                    # early would make a full pass prune every document beyond it.
                    if not items or len(items) < fullest:
                        return
                    if items == previous:  # the platform ignores the page parameter
                        raise SyncError(f"GET {response.url}: page {page} repeats page "
                                        f"{page - 1}", user_message="The knowledge platform "
                                        f"returns the same page for every {c.page_param}= value.")
                    fullest, page, previous = max(fullest, len(items)), page + 1, items
                elif follow is None:
                    return
                elif str(follow) in followed:  # a platform bug would otherwise loop forever
                    raise SyncError(f"GET {response.url}: next {follow!r} was already followed",
                                    user_message=f"The knowledge platform's pagination at "
                                    f"{response.url} repeats itself (next: {follow!r}).")
                elif isinstance(follow, str) and follow.startswith(("/", "http:", "https:")):
                    url, params = self._same_origin(urljoin(str(response.url), follow)), {}
                else:
                    params[c.cursor_param] = follow
                followed.add(str(follow))

    def _same_origin(self, url: str) -> str:
        """Next links must stay on the platform: the bearer token goes wherever we GET."""
        base = httpx.URL(self.config.base_url)
        target = httpx.URL(url)
        if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port):
            raise SyncError(f"next link {url} leaves {self.config.base_url}",
                            user_message=f"The knowledge platform sent a next-page link to "
                            f"another site ({target.host}); refusing to send it the token.")
        return url

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        params: dict[str, Any] = {}
        if since is not None and self.config.updated_since_param:
            stamp = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            params[self.config.updated_since_param] = stamp
        async for items in self._pages(self.config.list_path, params):
            for item in items:
                yield self.to_document(item)

    async def list_ids(self) -> set[str]:
        ids: set[str] = set()
        async for items in self._pages(self.config.ids_path, {}):
            for item in items:
                value = pick(item, self.fields["doc_id"]) if isinstance(item, dict) else item
                if value not in (None, ""):
                    ids.add(str(value))
        return ids

    def to_document(self, item: Any) -> Fetched:
        """Map one JSON item; a bad item becomes a failure that names it, not an abort."""
        raw_id = pick(item, self.fields["doc_id"]) if isinstance(item, dict) else None
        doc_id = "" if raw_id in (None, "") else str(raw_id)
        if not doc_id:
            return DocumentFailure("", f"an item without {self.fields['doc_id']!r} was "
                                   f"skipped: {str(item)[:120]}")
        try:
            return self._map(doc_id, item)
        except DocumentParseError as exc:
            return DocumentFailure(doc_id, f"{doc_id}: {exc}")

    def _map(self, doc_id: str, item: Mapping[str, Any]) -> SourceDocument:
        def get(name: str) -> Any:
            return pick(item, self.fields[name])

        def text(name: str) -> str:
            value = get(name)
            return "" if value is None else str(value).strip()

        parsed = self._body(get("body"))
        path = self.fields["access"]
        # A present-but-null field is a broken declaration (nobody), an absent one the default.
        declared = {"access": get("access")} if path in item or get("access") is not None \
            else {}
        access, warnings = read_access(declared, self.config.default_access, f"field {path!r}")
        return SourceDocument(
            doc_id=doc_id, title=text("title") or doc_id, body=parsed.body, url=text("url"),
            tags=as_tuple(get("tags")), authors=as_tuple(get("authors")),
            channels=as_tuple(get("channels")), doc_type=text("doc_type"),
            subtype=text("subtype"), language=text("language"),
            published_at=as_datetime(get("published_at"), "published_at"),
            updated_at=as_datetime(get("updated_at"), "updated_at"),
            access=access, warnings=warnings,
        )

    def _body(self, value: Any) -> Parsed:
        if value is None:
            raise DocumentParseError(f"no body at {self.fields['body']!r}")
        body = str(value)
        html = self.config.body_format == "html" or (
            self.config.body_format == "auto" and _HTML.match(body) is not None)
        return html_to_markdown(body) if html else Parsed(body, {})


class HttpItemConnector(HttpConnector):
    """An http source with `item_path`: it can read named items, for pushes."""

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        c = self.config
        async with self._client() as http:
            client = self._json(http)
            for doc_id in doc_ids:
                path = c.item_path.replace("{id}", quote(doc_id, safe="")).lstrip("/")
                try:
                    response = await client.get(path, accept=GONE | DENIED)
                    item = None if response.status_code in GONE | DENIED else decode_json(
                        response)
                except SyncError as exc:  # this item failed (retries spent); the rest go on
                    yield DocumentFailure(doc_id, f"{doc_id}: {exc.user_message}")
                    continue
                if response.status_code in DENIED:  # the token: every item would fail
                    raise SyncError(f"GET {response.url}: HTTP {response.status_code}",
                                    user_message=f"{c.label} answered HTTP "
                                    f"{response.status_code} for {response.url} (check the "
                                    "source's `token`).")
                yield DocumentGone(doc_id) if item is None else self.to_document(item)


def _items(body: Any, key: str, response: httpx.Response) -> list[Any]:
    """The page's list: under `key` (or "ids" on an id listing), or the body itself."""
    items = body if isinstance(body, list) else (
        body.get(key, body.get("ids")) if isinstance(body, dict) else None)
    if not isinstance(items, list):
        raise SyncError(f"GET {response.url}: no list under {key!r} in the response",
                        user_message=f"The knowledge platform's response for {response.url} "
                        f"has no '{key}' list; check the source's http.items_key.")
    return items


def _next(body: Any, key: str, response: httpx.Response) -> Any:
    """The body's next link or cursor, else an RFC 8288 `Link: <...>; rel="next"` header."""
    value = pick(body, key) if isinstance(body, dict) and key else None
    if value not in (None, ""):
        return value
    link = response.links.get("next", {}).get("url")
    return link or None


class HttpSettings(RetryKnobs):
    """Field mapping and paths of an `http` source: the `[sources.http]` table."""

    list_path: str = "/articles"
    ids_path: str = "/articles/ids"
    items_key: str = "items"
    next_key: str = "next"
    cursor_param: str = "cursor"
    page_param: str = ""  # e.g. "page": numbered pages instead of a next link or cursor
    updated_since_param: str = "updated_since"
    page_size: int = Field(100, ge=1)
    page_size_param: str = "limit"
    body_format: Literal["auto", "html", "markdown"] = "auto"
    fields: dict[str, str] = Field(default_factory=dict)
    item_path: str = ""  # e.g. "/articles/{id}": pushed ids are read one by one through it
    webhook_secret: SecretStr | None = None  # the signed webhook's shared secret
    webhook_tolerance_s: float = Field(DEFAULT_TOLERANCE_S, gt=0)  # older signed times refused


def build(source: SourceConfig, options: HttpSettings) -> HttpConnector:
    if not source.url:
        raise ConfigError(f"source {source.name} has no url", user_message=f"Source "
                          f"'{source.name}' is http but has no `url` (the API's base URL).")
    kind = HttpItemConnector if options.item_path else HttpConnector
    return kind(HttpConfig(
        base_url=source.url, token=source.token, fields=dict(options.fields),
        default_access=source.default_access, label=f"Source '{source.name}' (http)",
        retry=options,  # its four retry knobs
        **options.model_dump(exclude={"fields", "webhook_secret", "webhook_tolerance_s",
                                      *RetryKnobs.model_fields})))


def push(source: SourceConfig, options: HttpSettings) -> SignedWebhookReceiver:
    return SignedWebhookReceiver(options.webhook_secret, options.webhook_tolerance_s,
                                 by_id=bool(options.item_path))


SPEC = ConnectorSpec("http", HttpSettings, build, "a REST/JSON API in Sift's own contract",
                     push=push)
