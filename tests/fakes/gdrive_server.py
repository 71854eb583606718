"""A fake Google Drive API v3 and OAuth token endpoint, Google's documented shapes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.http import LocalServer

ACCOUNT = "sift-reader@acme-kb.iam.gserviceaccount.com"
TOKEN = "ya29.drive-token-1"
DOC, SHEET, SLIDES = ("application/vnd.google-apps.document",
                      "application/vnd.google-apps.spreadsheet",
                      "application/vnd.google-apps.presentation")
FOLDER = "application/vnd.google-apps.folder"


def permission(kind: str, value: str = "", role: str = "reader") -> dict[str, Any]:
    """A Drive permission resource: user/group by email, domain by name, anyone."""
    row: dict[str, Any] = {"kind": "drive#permission", "id": f"{kind}-{value or 'x'}",
                           "type": kind, "role": role}
    if kind in ("user", "group"):
        row |= {"emailAddress": value, "displayName": value.split("@")[0]}
    elif kind == "domain":
        row |= {"domain": value, "displayName": value, "allowFileDiscovery": True}
    else:
        row["allowFileDiscovery"] = False
    return row


@dataclass
class DriveFile:
    id: str
    name: str
    mime: str
    data: bytes  # for Google formats: what the export answers
    permissions: list[dict[str, Any]] = field(default_factory=list)
    modified: str = "2026-01-05T10:00:00.000Z"
    trashed: bool = False
    drive: str = ""  # a shared drive id; "" = My Drive
    size: int | None = None


class FakeDrive(LocalServer):
    """`keys` maps key ids to public keys the token endpoint trusts (delete one: the key was
    revoked). `export_fails` are file ids whose export answers Google's 403."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, DriveFile] = {}
        self.keys: dict[str, Any] = {}
        self.export_fails: set[str] = set()
        self.requests: list[str] = []
        self.token, self.tokens_issued = TOKEN, 0
        self.expire_after: int | None = None  # authorised requests until the token expires
        self.on_expiry: Callable[[], None] = lambda: None  # e.g. the secret is revoked too
        r = self.app.router
        r.add_post("/token", self._token)
        r.add_get("/drive/v3/files", self._list)
        r.add_get("/drive/v3/files/{id}", self._get)
        r.add_get("/drive/v3/files/{id}/export", self._export)
        r.add_get("/drive/v3/files/{id}/permissions", self._permissions)

    def key_file(self, directory: Path, key_id: str = "k1") -> Path:
        """A service account key file signed by a fresh RSA key this server trusts."""
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.keys[key_id] = private.public_key()
        pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
        path = directory / f"{key_id}.json"
        path.write_text(json.dumps({
            "type": "service_account", "project_id": "acme-kb", "private_key_id": key_id,
            "private_key": pem, "client_email": ACCOUNT, "client_id": "1049",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": f"{self.url}/token"}), encoding="utf-8")
        return path

    def put(self, file: DriveFile) -> None:
        self.files[file.id] = file

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        assertion = str(form.get("assertion") or "")
        refused = web.json_response({"error": "invalid_grant", "error_description":
                                     "Invalid JWT Signature."}, status=400)
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        try:
            key = self.keys[jwt.get_unverified_header(assertion).get("kid", "")]
            claims = jwt.decode(assertion, key, algorithms=["RS256"],
                                audience=f"{self.url}/token")
        except (KeyError, jwt.PyJWTError):
            return refused
        if claims.get("iss") != ACCOUNT or "drive" not in str(claims.get("scope")):
            return refused
        self.tokens_issued += 1
        return web.json_response({"access_token": self.token, "expires_in": 3599,
                                  "token_type": "Bearer"})

    def _gate(self, request: web.Request) -> web.Response | None:
        self.requests.append(request.path_qs)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return _error(401, "Request had invalid authentication credentials.", "authError")
        if self.expire_after is not None:
            self.expire_after -= 1
            if self.expire_after <= 0:  # this request still passes; the next ones do not
                self.token, self.expire_after = f"{TOKEN}-renewed-{self.tokens_issued}", None
                self.on_expiry()
        return None

    def _resource(self, f: DriveFile) -> dict[str, Any]:
        row: dict[str, Any] = {
            "kind": "drive#file", "id": f.id, "name": f.name, "mimeType": f.mime,
            "trashed": f.trashed, "modifiedTime": f.modified,
            "webViewLink": f"https://docs.google.com/document/d/{f.id}/edit?usp=drivesdk",
            "owners": [{"kind": "drive#user", "displayName": "Ana Lima",
                        "emailAddress": "ana@acme.com"}],
            "lastModifyingUser": {"kind": "drive#user", "displayName": "Bo Chen"}}
        if not f.mime.startswith("application/vnd.google-apps."):  # only blobs have a size
            row["size"] = str(len(f.data) if f.size is None else f.size)
        if f.drive:
            row["driveId"] = f.drive
        return row

    def _matches(self, f: DriveFile, query: str) -> bool:
        if query == "trashed = false":
            return not f.trashed
        since = re.fullmatch(r"modifiedTime > '([0-9T:.\-]+)'", query)
        if since is None:
            raise web.HTTPBadRequest(text=f"unsupported q {query!r}")
        return _stamp(f.modified) > _stamp(since.group(1))

    async def _list(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        q = request.query
        if q.get("driveId") and (q.get("supportsAllDrives") != "true" or
                                 q.get("includeItemsFromAllDrives") != "true"):
            return _error(403, "The attempted action requires shared drive support to be "
                          "enabled.", "teamDrivesSupportRequired")
        rows = sorted((f for f in self.files.values() if self._matches(f, q.get("q", ""))
                       and (q.get("corpora") != "drive" or f.drive == q.get("driveId"))),
                      key=lambda f: f.id)
        start, size = int(q.get("pageToken") or 0), int(q.get("pageSize") or 100)
        body: dict[str, Any] = {"kind": "drive#fileList", "incompleteSearch": False,
                                "files": [self._resource(f) for f in rows[start:start + size]]}
        if start + size < len(rows):
            body["nextPageToken"] = str(start + size)
        return web.json_response(body)

    async def _get(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        f = self.files.get(request.match_info["id"])
        if f is None:
            return _error(404, f"File not found: {request.match_info['id']}.", "notFound")
        if request.query.get("alt") != "media":
            return web.json_response(self._resource(f))
        if f.mime.startswith("application/vnd.google-apps."):
            return _error(403, "Only files with binary content can be downloaded. Use Export "
                          "with Docs Editors files.", "fileNotDownloadable")
        return web.Response(body=f.data, content_type="application/octet-stream")

    async def _export(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        f = self.files.get(request.match_info["id"])
        if f is None:
            return _error(404, f"File not found: {request.match_info['id']}.", "notFound")
        if f.id in self.export_fails:
            return _error(403, "This file is too large to be exported.",
                          "exportSizeLimitExceeded")
        wanted = {DOC: "text/html", SHEET: "text/csv", SLIDES: "text/plain"}.get(f.mime)
        if request.query.get("mimeType") != wanted:
            return _error(400, "The requested conversion is not supported.", "badRequest")
        return web.Response(body=f.data, content_type=wanted)

    async def _permissions(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        f = self.files.get(request.match_info["id"])
        if f is None:
            return _error(404, f"File not found: {request.match_info['id']}.", "notFound")
        if f.drive and request.query.get("supportsAllDrives") != "true":
            return _error(404, f"File not found: {f.id}.", "notFound")
        return web.json_response({"kind": "drive#permissionList",
                                  "permissions": f.permissions})


def _error(status: int, message: str, reason: str) -> web.Response:
    return web.json_response({"error": {"code": status, "message": message, "errors": [
        {"domain": "global", "reason": reason, "message": message}]}}, status=status)


def _stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)
