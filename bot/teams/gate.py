"""What /api/messages refuses before the Agents SDK sees it: bodies that are not an activity,
service URLs Sift must never call, and (anonymous local testing) anything from elsewhere."""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from urllib.parse import urlsplit

# Headers a reverse proxy adds: a request carrying one came from another machine, whatever
# address the socket shows (a proxy on the same host connects from 127.0.0.1).
FORWARDED = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
             "x-real-ip", "via")


@dataclass(frozen=True)
class Refusal:
    status: int
    reason: str  # for the log and the caller: names what is wrong, never echoes the input


def forwarded(headers: dict[str, str]) -> bool:
    return any(name in headers for name in FORWARDED)


def loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_activity(body: bytes, *, anonymous: bool, own_port: int | None = None
                   ) -> Refusal | None:
    """None for a body the SDK may take: a JSON object with a type and, when it names one,
    an http(s) service URL (loopback only while anonymous: an unauthenticated request must
    never make Sift send an answer, and its reply token, to another machine), never Sift's
    own port (its replies would be requests to Sift's own pages)."""
    try:
        activity = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return Refusal(400, "the body is not JSON")
    if not isinstance(activity, dict) or not isinstance(activity.get("type"), str):
        return Refusal(400, "the body is not an activity (a JSON object with a type)")
    url = activity.get("serviceUrl")
    if url is None:
        return None
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") \
            or not urlsplit(url).hostname:
        return Refusal(400, "the activity's serviceUrl is not an http(s) URL")
    if anonymous and not loopback_url(url):
        return Refusal(403, "an unauthenticated activity may only name a loopback serviceUrl")
    if own_port is not None and loopback_url(url) and _port(url) == own_port:
        return Refusal(403, "the activity's serviceUrl is this Sift itself")
    return None


def _port(url: str) -> int | None:
    parts = urlsplit(url)
    try:
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
