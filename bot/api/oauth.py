"""OAuth access tokens from the console's OpenID provider: JWTs checked with joserfc against
the provider's key set, for this very resource (RFC 8707), naming a person by email."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

# Asymmetric only, as for the console's ID tokens: "none" would accept an unsigned token, and
# HS256 keyed with a published RSA key would let anyone sign. joserfc verifies only these.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
              "EdDSA")
LEEWAY_S = 60  # clock skew allowed between Sift and the provider
# An unknown `kid` fetches the key set again (the provider rotated), at most this often: a
# stream of forged kids must not turn Sift into a load on the provider.
REFRESH_EVERY_S = 30.0


class OAuthRefused(Exception):
    """A token that names nobody here; the message is the cause, for the log (never the
    token itself)."""


class ProviderUnreachable(Exception):
    """The provider's discovery document or key set could not be read: the cause."""


class IssuerKeys:
    """The provider's signing keys, found through its discovery document and kept; fetched
    again when a token names a key the set lacks."""

    def __init__(self, issuer: str, timeout_s: float,
                 refresh_every_s: float = REFRESH_EVERY_S) -> None:
        self.issuer = issuer.rstrip("/")
        self._refresh_every_s = refresh_every_s
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._keys: KeySet | None = None
        self._named_issuer = ""  # the discovery document's own spelling, which tokens carry
        self._fetched_at = 0.0
        self._lock = asyncio.Lock()

    async def current(self) -> tuple[str, KeySet]:
        if self._keys is None:
            await self._fetch()
        assert self._keys is not None
        return self._named_issuer, self._keys

    async def refreshed(self) -> KeySet | None:
        """The key set fetched again, or None when it was fetched too recently to ask."""
        async with self._lock:
            if time.monotonic() - self._fetched_at < self._refresh_every_s:
                return None
        await self._fetch()
        return self._keys

    async def _fetch(self) -> None:
        async with self._lock:
            discovery = await self._json(self.issuer + "/.well-known/openid-configuration")
            named = str(discovery.get("issuer", ""))
            if named.rstrip("/") != self.issuer:
                raise ProviderUnreachable(f"the discovery document names issuer {named!r}, "
                                          f"not {self.issuer!r}")
            jwks_uri = discovery.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                raise ProviderUnreachable("the discovery document has no jwks_uri")
            try:
                keys = KeySet.import_key_set(await self._json(jwks_uri))  # type: ignore[arg-type]
            except (JoseError, ValueError, KeyError, TypeError) as exc:
                raise ProviderUnreachable(f"the key set at {jwks_uri} is unusable: {exc}"
                                          ) from None
            self._keys, self._named_issuer = keys, named
            self._fetched_at = time.monotonic()

    async def _json(self, url: str) -> dict[str, Any]:
        try:
            async with aiohttp.ClientSession(timeout=self._timeout) as session, \
                    session.get(url, headers={"Accept": "application/json"}) as response:
                if response.status != 200:
                    raise ProviderUnreachable(f"{url} answered HTTP {response.status}")
                body = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise ProviderUnreachable(f"{url} could not be read: {exc!r}") from None
        if not isinstance(body, dict):
            raise ProviderUnreachable(f"{url} is not a JSON object")
        return body


class OAuthTokens:
    """Who an access token is: signed by the provider with an allowed algorithm, issued by
    it, for `resource` (its `aud`), within its `exp` and `nbf`; the person is the
    `email_claim`, unless the provider says the address is unverified."""

    def __init__(self, keys: IssuerKeys, email_claim: str = "email") -> None:
        self._keys = keys
        self._email_claim = email_claim

    async def email_of(self, token: str, resource: str) -> str:
        """The token's email; OAuthRefused naming why not; ProviderUnreachable."""
        issuer, keys = await self._keys.current()
        claims = await self._verified(token, keys)
        registry = jwt.JWTClaimsRegistry(
            leeway=LEEWAY_S, iss={"essential": True, "value": issuer},
            aud={"essential": True, "values": [resource, resource + "/"]},
            exp={"essential": True})
        try:
            registry.validate(claims)
        except JoseError as exc:
            raise OAuthRefused(f"claims refused: {exc}") from None
        email = claims.get(self._email_claim)
        if not isinstance(email, str) or "@" not in email:
            raise OAuthRefused(f"the token has no email in its {self._email_claim!r} claim")
        if claims.get("email_verified") is False:
            raise OAuthRefused("the provider says the token's email is not verified")
        return email.strip().casefold()

    async def _verified(self, token: str, keys: KeySet) -> dict[str, Any]:
        try:
            try:
                return dict(jwt.decode(token, keys, algorithms=ALGORITHMS).claims)
            except InvalidKeyIdError:
                fresh = await self._keys.refreshed()
                if fresh is None:
                    raise
                return dict(jwt.decode(token, fresh, algorithms=ALGORITHMS).claims)
        except JoseError as exc:
            raise OAuthRefused(f"signature refused: {exc}") from None
        except (ValueError, TypeError, UnicodeDecodeError) as exc:  # not a JWT at all
            raise OAuthRefused(f"not a signed JWT: {type(exc).__name__}") from None
