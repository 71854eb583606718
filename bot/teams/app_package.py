"""The Teams app package (manifest.json and its two icons, zipped flat) for one bot."""

from __future__ import annotations

import json
import uuid
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bot.settings import PROJECT_ROOT
from rag.errors import ConfigError

# The manifest template (schema 1.22) and the icons deploy/teams/icons.py draws.
TEMPLATE = PROJECT_ROOT / "deploy" / "teams"
ICONS = ("color.png", "outline.png")


def manifest_for(template: dict[str, Any], app_id: str, website: str | None = None,
                 version: str | None = None) -> dict[str, Any]:
    """The manifest with the bot's app id (also used as the Teams app id) filled in."""
    manifest = json.loads(json.dumps(template))
    manifest["id"] = app_id
    # Resource-specific consent (auto-answer channels and group chats) names the same app.
    manifest["webApplicationInfo"]["id"] = app_id
    for bot in (*manifest["bots"], *manifest.get("composeExtensions", ())):
        bot["botId"] = app_id  # the message action ("Save to Sift") is the same bot's
    if website:
        manifest["developer"].update(websiteUrl=website, privacyUrl=f"{website}/privacy",
                                     termsOfUseUrl=f"{website}/terms")
    if version:
        manifest["version"] = version
    return manifest


def template() -> dict[str, Any]:
    found: dict[str, Any] = json.loads((TEMPLATE / "manifest.json").read_text(encoding="utf-8"))
    return found


def build(app_id: str, out: Path, website: str | None = None,
          version: str | None = None) -> Path:
    """Write the package to `out`; `app_id` is the Azure Bot's Microsoft App ID."""
    try:
        app_id = str(uuid.UUID(app_id))
    except ValueError as exc:
        raise ConfigError("bad --app-id", user_message=f"{app_id!r} is not an app (client) id: "
                          "the Azure Bot's Microsoft App ID is a GUID.") from exc
    manifest = manifest_for(template(), app_id, website, version)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("manifest.json", json.dumps(manifest, indent=2) + "\n")
        for icon in ICONS:
            package.write(TEMPLATE / icon, icon)
    return out


def website_url(text: str) -> str:
    """An https:// address with a host (Teams refuses the package otherwise); a bare host is
    taken as https://. ValueError with the sentence why for anything else."""
    url = text.strip() if "://" in text else "https://" + text.strip()
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or "." not in parts.hostname:
        raise ValueError(f"{text!r} is not a public https:// address (Teams shows the privacy "
                         "and terms pages under it to every user)")
    return url.rstrip("/")
