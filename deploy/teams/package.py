"""Builds the Teams app package (manifest.json + icons, zipped flat) for one bot registration.

    python deploy/teams/package.py --app-id <Azure Bot app id> [--website https://…]

The app id defaults to SIFT_TEAMS_APP_ID. The result, sift-teams.zip, is what Teams admin
center (Manage apps, Upload) or Teams (Apps, Manage your apps, Upload an app) takes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
ICONS = ("color.png", "outline.png")


def manifest_for(template: dict[str, Any], app_id: str, website: str | None = None,
                 version: str | None = None) -> dict[str, Any]:
    """The manifest with the bot's app id (also used as the Teams app id) filled in."""
    manifest = json.loads(json.dumps(template))
    manifest["id"] = app_id
    # Resource-specific consent (auto-answer channels and group chats) names the same app.
    manifest["webApplicationInfo"]["id"] = app_id
    for bot in manifest["bots"]:
        bot["botId"] = app_id
    if website:
        base = website.rstrip("/")
        manifest["developer"].update(websiteUrl=base, privacyUrl=f"{base}/privacy",
                                     termsOfUseUrl=f"{base}/terms")
    if version:
        manifest["version"] = version
    return manifest


def build(app_id: str, out: Path, website: str | None = None, version: str | None = None) -> Path:
    try:
        app_id = str(uuid.UUID(app_id))
    except ValueError as exc:
        raise SystemExit(f"package: {app_id!r} is not an app (client) id (a GUID)") from exc
    template = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    manifest = manifest_for(template, app_id, website, version)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("manifest.json", json.dumps(manifest, indent=2) + "\n")
        for icon in ICONS:
            package.write(HERE / icon, icon)
    return out


def website_url(text: str) -> str:
    """An https:// address with a host (Teams refuses the package otherwise); a bare host
    is taken as https://."""
    url = text.strip() if "://" in text else "https://" + text.strip()
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or "." not in parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a public https:// address (Teams shows the privacy and terms "
            "pages under it to every user)")
    return url.rstrip("/")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app-id", default=os.environ.get("SIFT_TEAMS_APP_ID", ""),
                        help="the Azure Bot's Microsoft App ID (default: $SIFT_TEAMS_APP_ID)")
    parser.add_argument("--website", type=website_url,
                        help="https URL of your Sift page (privacy, terms below)")
    parser.add_argument("--version", help="app version, e.g. 1.0.1 (raise it for each upload)")
    parser.add_argument("--out", type=Path, default=Path("sift-teams.zip"))
    args = parser.parse_args(argv)
    if not args.app_id:
        parser.error("--app-id is required (or set SIFT_TEAMS_APP_ID)")
    path = build(args.app_id, args.out, args.website, args.version)
    print(f"wrote {path}")
    if args.website is None:  # Teams shows these links to every user: say whose they are
        site = json.loads((HERE / "manifest.json").read_text())["developer"]["websiteUrl"]
        print(f"note: the app's website, privacy and terms links point at {site} (an "
              "example); pass --website https://… with your own page", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
