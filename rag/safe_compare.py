"""Constant-time comparison of secrets from requests, whatever characters they hold."""

from __future__ import annotations

import hmac


def as_bytes(text: str) -> bytes:
    # hmac.compare_digest raises TypeError for a str with non-ASCII characters: a header or
    # form field an attacker filled with "é" was a 500 with a traceback, not a refusal.
    return text.encode("utf-8", "surrogateescape")


def same_secret(given: str, expected: str) -> bool:
    """True when `given` equals `expected`, in time that does not depend on where they differ."""
    return hmac.compare_digest(as_bytes(given), as_bytes(expected))
