"""GitHub App authentication: a JWT signed with the app's private key buys an installation
token (an hour's life), bought again when GitHub refuses the old one."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import jwt

from rag.errors import ConfigError, SyncError


def read_key(path: Path, source: str) -> str:
    """The app's PEM private key, checked once when the source is built."""
    try:
        pem = path.read_text(encoding="utf-8")
        jwt.encode({"iss": "check"}, pem, algorithm="RS256")
    except (OSError, ValueError, TypeError, jwt.PyJWTError) as exc:
        raise ConfigError(f"source {source}: private key {path}: {exc}", user_message=f"Source "
                          f"'{source}': `github.private_key_file` ({path}) is not a readable "
                          "PEM private key (download one from the app's settings page).") from exc
    return pem


def app_jwt(app_id: str, pem: str, now: float | None = None) -> str:
    """RS256, issued a minute in the past (clock drift) and valid nine minutes (GitHub caps
    a JWT at ten)."""
    issued = int(now if now is not None else time.time()) - 60
    return jwt.encode({"iat": issued, "exp": issued + 600, "iss": app_id}, pem,
                      algorithm="RS256")


async def installation_token(http: httpx.AsyncClient, app_id: str, installation: int,
                             pem: str, label: str) -> str:
    """POST /app/installations/{id}/access_tokens as the app; the token, or one sentence."""
    url = f"app/installations/{installation}/access_tokens"
    try:
        response = await http.post(url, auth=httpx.Auth(), headers={
            "Authorization": f"Bearer {app_jwt(app_id, pem)}",
            "Accept": "application/vnd.github+json"})
    except httpx.HTTPError as exc:
        raise SyncError(f"installation token request failed: {type(exc).__name__}: {exc}",
                        user_message=f"{label} could not reach GitHub for an installation token "
                        f"({type(exc).__name__}).") from exc
    if response.status_code != 201:
        raise SyncError(f"POST {response.url}: HTTP {response.status_code}", user_message=(
            f"{label}: GitHub refused an installation token (HTTP {response.status_code}); "
            "check `github.app_id`, `github.installation_id` and `github.private_key_file`."))
    token = response.json().get("token")
    if not isinstance(token, str) or not token:
        raise SyncError(f"POST {response.url}: no token", user_message=f"{label}: GitHub "
                        "answered the installation token request without a token.")
    return token
