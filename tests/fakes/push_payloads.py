"""What Microsoft Graph and Google Drive send to a notification URL, as their docs show it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

GRAPH_CLIENT_STATE = "sift-graph-client-state-7f3a"
DRIVE_CHANNEL_TOKEN = "sift-drive-channel-token-91c2"
DRIVE_CHANNEL_ID = "4ba78bf0-6a47-11e2-bcfd-0800200c9a66"
TENANT_ID = "84df9e7f-e9f6-40af-b435-aaaaaaaaaaaa"
SUBSCRIPTION_ID = "38031b7d-16b1-448a-8e68-68b8aec62315"


def graph_expiry(after: timedelta = timedelta(days=2)) -> str:
    """Graph writes seven fractional digits and a Z."""
    return (datetime.now(UTC) + after).strftime("%Y-%m-%dT%H:%M:%S.0000000Z")


def graph_change(*drives: str, client_state: str = GRAPH_CLIENT_STATE,
                 expires: timedelta = timedelta(days=2)) -> bytes:
    """A changeNotificationCollection: one `updated` driveItem notification per drive root."""
    return json.dumps({"value": [{
        "subscriptionId": SUBSCRIPTION_ID, "subscriptionExpirationDateTime": graph_expiry(expires),
        "changeType": "updated", "resource": f"drives/{drive}/root",
        "resourceData": {"@odata.type": "#Microsoft.Graph.DriveItem"},
        "clientState": client_state, "tenantId": TENANT_ID} for drive in drives]}).encode()


def graph_lifecycle(event: str, client_state: str = GRAPH_CLIENT_STATE) -> bytes:
    """A lifecycle notification (`missed`, `reauthorizationRequired`, `subscriptionRemoved`)."""
    return json.dumps({"value": [{
        "subscriptionId": SUBSCRIPTION_ID, "subscriptionExpirationDateTime": graph_expiry(),
        "tenantId": TENANT_ID, "clientState": client_state, "lifecycleEvent": event}]}).encode()


GRAPH_HEADERS = {"Content-Type": "application/json; charset=utf-8"}
GRAPH_VALIDATION_HEADERS = {"Content-Type": "text/plain; charset=utf-8"}


def drive_message(state: str, number: int, *, token: str = DRIVE_CHANNEL_TOKEN,
                  channel: str = DRIVE_CHANNEL_ID, expires: timedelta = timedelta(days=6),
                  file: str = "") -> dict[str, str]:
    """The headers of a Drive push message (the body is empty): a `changes.watch` channel's,
    or with `file` a `files.watch` channel's on that file."""
    uri = (f"https://www.googleapis.com/drive/v3/files/{file}?alt=json&supportsAllDrives=true"
           if file else "https://www.googleapis.com/drive/v3/changes?alt=json&pageToken=1234"
           "&supportsAllDrives=true")
    return {
        "Content-Type": "application/json; utf-8",
        "X-Goog-Channel-ID": channel,
        "X-Goog-Channel-Token": token,
        "X-Goog-Channel-Expiration": format_datetime(datetime.now(UTC) + expires, usegmt=True),
        "X-Goog-Resource-ID": "ret08u3rv24htgh289g",
        "X-Goog-Resource-URI": uri,
        "X-Goog-Resource-State": state,
        "X-Goog-Message-Number": str(number),
    }
