"""Google Drive API v3 for the Drive connector: service-account token, files, exports."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import jwt

from rag.errors import ConfigError, SyncError
from sync.connectors.common.http_client import JsonClient, TooLarge, decode_json
from sync.connectors.common.oauth import fetch_token

SCOPE = "https://www.googleapis.com/auth/drive.readonly"
FOLDER = "application/vnd.google-apps.folder"
# Google's own formats have no bytes to download: each is exported to one we convert.
EXPORTS = {"application/vnd.google-apps.document": "text/html",
           "application/vnd.google-apps.presentation": "text/plain",
           "application/vnd.google-apps.spreadsheet": "text/csv"}
FILE_FIELDS = ("id, name, mimeType, modifiedTime, trashed, webViewLink, size, driveId, "
               "owners(displayName), lastModifyingUser(displayName)")
FIELDS = f"nextPageToken, files({FILE_FIELDS})"
REFUSED = frozenset({403, 404})  # not exportable, too large to export, or gone: skip the file


@dataclass(frozen=True)
class ServiceAccount:
    """The parts of a service account's JSON key Sift uses (the key stays in memory)."""

    email: str
    private_key: str
    key_id: str
    token_uri: str

    @classmethod
    def load(cls, path: Path, source: str) -> ServiceAccount:
        where = f"Source '{source}': `gdrive.key_file` ({path})"
        try:
            key = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"{path}: {exc}", user_message=f"{where} cannot be read "
                              f"({type(exc).__name__}).") from exc
        except ValueError as exc:
            raise ConfigError(f"{path}: not JSON", user_message=f"{where} is not a JSON "
                              "key file.") from exc
        if not isinstance(key, dict) or key.get("type") != "service_account" or not all(
                key.get(k) for k in ("client_email", "private_key", "token_uri")):
            raise ConfigError(f"{path}: not a service account key", user_message=f"{where} "
                              "is not a service account key (type, client_email, private_key, "
                              "token_uri).")
        return cls(str(key["client_email"]), str(key["private_key"]),
                   str(key.get("private_key_id") or ""), str(key["token_uri"]))

    def assertion(self, subject: str, now: float | None = None) -> str:
        """The signed JWT of Google's JWT bearer grant (RFC 7523), valid for an hour."""
        issued = int(now if now is not None else time.time())
        claims = {"iss": self.email, "scope": SCOPE, "aud": self.token_uri, "iat": issued,
                  "exp": issued + 3600, **({"sub": subject} if subject else {})}
        headers = {"kid": self.key_id} if self.key_id else None
        return jwt.encode(claims, self.private_key, algorithm="RS256", headers=headers)


async def access_token(http: httpx.AsyncClient, account: ServiceAccount, subject: str,
                       label: str) -> str:
    try:
        assertion = account.assertion(subject)
    except (ValueError, TypeError, jwt.PyJWTError) as exc:  # a damaged private key
        raise SyncError(f"cannot sign with the key: {type(exc).__name__}", user_message=f"{label}:"
                        " the private key in `gdrive.key_file` cannot sign a token.") from exc
    return await fetch_token(http, account.token_uri, {
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion},
        label=label, hint="`gdrive.key_file` (a deleted or disabled key?) and `gdrive.subject`")


def reason(response: httpx.Response) -> str:
    """Google's error sentence ("This file is too large to be exported."), or the status."""
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = ""
    return f"HTTP {response.status_code}" + (f": {message}" if message else "")


class DriveApi:
    """`base` is the API root (https://www.googleapis.com/); every call covers shared drives."""

    def __init__(self, api: JsonClient, page_size: int) -> None:
        self.api, self.page_size = api, page_size

    async def files(self, query: str, drive: str = "",
                    fields: str = FIELDS) -> AsyncIterator[dict[str, Any]]:
        params: dict[str, Any] = {
            "q": query, "fields": fields, "pageSize": self.page_size,
            "supportsAllDrives": "true", "includeItemsFromAllDrives": "true",
            **({"corpora": "drive", "driveId": drive} if drive else {"corpora": "allDrives"})}
        while True:
            body = decode_json(await self.api.get("drive/v3/files", params))
            for item in body.get("files") or () if isinstance(body, dict) else ():
                if isinstance(item, dict) and item.get("id"):
                    yield item
            token = body.get("nextPageToken") if isinstance(body, dict) else None
            if not token:
                return
            params["pageToken"] = token

    async def file(self, file_id: str) -> dict[str, Any] | str | None:
        """One file as `files` lists it; None when it is gone, or why it is unreadable."""
        response = await self.api.get(f"drive/v3/files/{file_id}", {
            "fields": FILE_FIELDS, "supportsAllDrives": "true"}, accept=REFUSED)
        if response.status_code == 404:
            return None
        if response.status_code in REFUSED:
            return reason(response)
        body = decode_json(response)
        return body if isinstance(body, dict) and body.get("id") else "not a file resource"

    async def permissions(self, file_id: str) -> list[dict[str, Any]] | str:
        found: list[dict[str, Any]] = []
        params: dict[str, Any] = {"supportsAllDrives": "true", "pageSize": 100, "fields":
                                  "nextPageToken, permissions(id, type, role, emailAddress, "
                                  "domain, allowFileDiscovery, deleted)"}
        while True:
            response = await self.api.get(f"drive/v3/files/{file_id}/permissions", params,
                                          accept=REFUSED)
            if response.status_code in REFUSED:
                return reason(response)
            body = decode_json(response)
            found += [p for p in body.get("permissions") or () if isinstance(p, dict)]
            if not body.get("nextPageToken"):
                return found
            params["pageToken"] = body["nextPageToken"]

    async def content(self, item: dict[str, Any], max_bytes: int) -> bytes | str:
        """A Google format exported (HTML, text, CSV), any other file downloaded; stopped past
        `max_bytes` (an export has no size in the listing to check before)."""
        file_id, export = str(item["id"]), EXPORTS.get(str(item.get("mimeType")))
        try:
            if export:
                response = await self.api.get(f"drive/v3/files/{file_id}/export",
                                              {"mimeType": export}, accept=REFUSED,
                                              max_bytes=max_bytes)
            else:
                response = await self.api.get(f"drive/v3/files/{file_id}", {
                    "alt": "media", "supportsAllDrives": "true"}, accept=REFUSED,
                    max_bytes=max_bytes)
        except TooLarge as exc:
            return f"it is {exc.user_message}, `gdrive.max_file_mb`"
        return reason(response) if response.status_code in REFUSED else response.content


def access_of(permissions: list[dict[str, Any]]) -> tuple[str, ...]:
    """Anyone (with or without the link) → public; groups, domains and users as principals;
    nothing recognisable → () (nobody)."""
    found: list[str] = []
    for perm in permissions:
        kind, email = perm.get("type"), str(perm.get("emailAddress") or "").lower()
        if perm.get("deleted"):
            continue
        if kind == "anyone":
            return ("public",)
        if kind == "domain" and perm.get("domain"):
            found.append(f"gdrive:domain:{str(perm['domain']).lower()}")
        elif kind in ("group", "user") and email:
            found.append(f"gdrive:{kind}:{email}")
    return tuple(dict.fromkeys(found))


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
