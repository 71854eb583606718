"""OAuth access tokens, checked against a real (fake) OpenID provider over HTTP: the one that
is for this resource names its person; every forgery an attacker could try is refused, and
says why to the log."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from bot.api.oauth import IssuerKeys, OAuthRefused, OAuthTokens, ProviderUnreachable
from tests.fakes.oidc_server import FakeOidc

RESOURCE = "https://sift.example.com/mcp"


@pytest.fixture
async def oidc() -> AsyncIterator[FakeOidc]:
    async with FakeOidc("sift-console", "console-secret") as server:
        assert isinstance(server, FakeOidc)
        yield server


def _tokens(oidc: FakeOidc, **keys: Any) -> OAuthTokens:
    return OAuthTokens(IssuerKeys(oidc.url, 5.0, **keys))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _tampered(token: str, **claims: Any) -> str:
    """The same header and signature over a payload with `claims` changed."""
    header, payload, signature = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return ".".join([header, _b64(json.dumps({**body, **claims}).encode()), signature])


def _hs256_with_public_key(oidc: FakeOidc) -> str:
    """The classic confusion: HMAC keyed with the provider's published RSA key."""
    pem = oidc.key.public_key().public_bytes(serialization.Encoding.PEM,
                                             serialization.PublicFormat.SubjectPublicKeyInfo)
    now = int(time.time())
    head = _b64(json.dumps({"alg": "HS256", "kid": oidc.kid, "typ": "at+jwt"}).encode())
    body = _b64(json.dumps({"iss": oidc.url, "aud": RESOURCE, "exp": now + 300,
                            "email": "mallory@example.com"}).encode())
    mac = hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(mac)}"


async def test_a_token_for_this_resource_names_its_person(oidc: FakeOidc) -> None:
    oidc.account.email = "Ada@Example.com"
    assert await _tokens(oidc).email_of(oidc.access_token(RESOURCE), RESOURCE) == \
        "ada@example.com"
    # A trailing slash on the audience is the same resource; a list holding it is fine.
    assert await _tokens(oidc).email_of(oidc.access_token(RESOURCE + "/"), RESOURCE)
    assert await _tokens(oidc).email_of(
        oidc.access_token(["https://other.example.com", RESOURCE]), RESOURCE)


def forgeries(now: int) -> dict[str, tuple[dict[str, Any], str]]:
    """Claims that must be refused, each with the word its refusal names; times from `now`,
    taken as the test runs (a time fixed when the module was imported has passed by the
    time a long suite reaches the test)."""
    return {
        "another resource": ({"aud": "https://sift.example.com/api/v1"}, "aud"),
        "another service": ({"aud": "https://wiki.example.com"}, "aud"),
        "the console's ID token audience": ({"aud": "sift-console"}, "aud"),
        "no audience": ({"aud": None}, "aud"),
        "expired": ({"exp": now - 600}, "exp"),
        "no expiry": ({"exp": None}, "exp"),
        "not yet valid": ({"nbf": now + 600}, "not yet valid"),
        "another issuer": ({"iss": "https://login.evil.example"}, "iss"),
        "no email": ({"email": None}, "email"),
        "an unverified email": ({"email_verified": False}, "verified"),
    }


@pytest.mark.parametrize("case", forgeries(0))
async def test_claims_that_do_not_hold_are_refused(oidc: FakeOidc, case: str) -> None:
    overrides, cause = forgeries(int(time.time()))[case]
    with pytest.raises(OAuthRefused, match=cause):
        await _tokens(oidc).email_of(oidc.access_token(RESOURCE, **overrides), RESOURCE)


async def test_signatures_that_do_not_hold_are_refused(oidc: FakeOidc) -> None:
    tokens = _tokens(oidc)
    good = oidc.access_token(RESOURCE)
    forged = {"tampered claims": _tampered(good, email="mallory@example.com"),
              "an unsigned token": _unsigned(oidc),
              "HS256 keyed with the public key": _hs256_with_public_key(oidc),
              "garbage": "not-a-jwt", "a bare signature": good.rsplit(".", 1)[1]}
    async with FakeOidc("sift-console", "other") as other:  # a real key, not the issuer's
        assert isinstance(other, FakeOidc)
        forged["another provider's key"] = other.access_token(RESOURCE, iss=oidc.url)
    for case, token in forged.items():
        with pytest.raises(OAuthRefused) as refused:
            await tokens.email_of(token, RESOURCE)
        assert token not in str(refused.value), case  # the cause never carries the token
    assert await tokens.email_of(good, RESOURCE)  # the genuine one still passes


def _unsigned(oidc: FakeOidc) -> str:
    oidc.algorithm = "none"
    try:
        return oidc.access_token(RESOURCE)
    finally:
        oidc.algorithm = "RS256"


async def test_a_rotated_key_is_fetched_once(oidc: FakeOidc) -> None:
    tokens = _tokens(oidc, refresh_every_s=0.0)
    assert await tokens.email_of(oidc.access_token(RESOURCE), RESOURCE)
    oidc.rotate()
    assert await tokens.email_of(oidc.access_token(RESOURCE), RESOURCE)
    assert await tokens.email_of(oidc.access_token(RESOURCE), RESOURCE)
    assert oidc.jwks_requests == 2


async def test_unknown_key_ids_do_not_hammer_the_provider(oidc: FakeOidc) -> None:
    tokens = _tokens(oidc)  # the default: at most one refresh every 30 s
    assert await tokens.email_of(oidc.access_token(RESOURCE), RESOURCE)
    oidc.signer_kid = "forged-kid"
    for _ in range(5):
        with pytest.raises(OAuthRefused, match="kid"):
            await tokens.email_of(oidc.access_token(RESOURCE), RESOURCE)
    assert oidc.jwks_requests == 1


async def test_a_provider_that_cannot_be_read_is_unreachable_not_a_refusal(
        oidc: FakeOidc) -> None:
    oidc.issuer = "https://someone.else.example"  # discovery names another issuer
    with pytest.raises(ProviderUnreachable, match="names issuer"):
        await _tokens(oidc).email_of(oidc.access_token(RESOURCE), RESOURCE)
    with pytest.raises(ProviderUnreachable, match="could not be read"):
        await OAuthTokens(IssuerKeys("http://127.0.0.1:9", 2.0)).email_of("x.y.z", RESOURCE)
