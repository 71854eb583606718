"""OpenID Connect for the console: discovery, authorization code with PKCE, ID token checks."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote_plus, urlencode, urlsplit

import aiohttp
import jwt

from bot.admin.auth import ADMIN, VIEWER
from bot.settings import OidcSettings
from rag.errors import ConfigError
from rag.safe_compare import same_secret
from storage.expiring import ExpiringStore

log = logging.getLogger(__name__)

# Asymmetric only: a symmetric alg would turn the client secret into a signing key.
SAFE_ALGORITHMS = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                   "ES512", "EdDSA"}
PENDING_S = 600.0  # how long a started sign-in may take at the provider
LEEWAY_S = 60  # clock skew allowed between Sift and the provider


class Refused(Exception):
    """A sign-in that must not succeed: `sentence` is what the person reads; the cause (never
    a token or the secret) goes to the log."""

    def __init__(self, sentence: str, cause: str) -> None:
        super().__init__(cause)
        self.sentence = sentence


NOT_STARTED = "This sign-in did not start here or has expired: please start again."
PROVIDER_SAID_NO = "The identity provider did not complete the sign-in: please start again."
UNVERIFIED = "The identity provider's answer could not be verified, so nobody was signed in."


def check(settings: OidcSettings) -> None:
    """ConfigError naming the setting when OIDC is on but cannot work as configured."""
    if not settings.enabled:
        return
    parts = urlsplit(settings.issuer)
    local = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and local):
        problem = (f"SIFT_ADMIN__OIDC__ISSUER must be an https:// URL (http only on "
                   f"loopback), not {settings.issuer!r}.")
        raise ConfigError(problem, user_message=problem)
    if not settings.client_id:
        problem = "SIFT_ADMIN__OIDC__CLIENT_ID is required when SIFT_ADMIN__OIDC__ISSUER is set."
        raise ConfigError(problem, user_message=problem)


def challenge_of(verifier: str) -> str:
    """PKCE S256: base64url(sha256(verifier)) without padding (RFC 7636)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class Pending:
    nonce: str
    verifier: str
    next: str
    redirect_uri: str


def _pending_key(state: str) -> str:
    return "oidc-pending:" + hashlib.sha256(state.encode()).hexdigest()


@dataclass(frozen=True)
class Person:
    email: str
    role: str


def role_of(settings: OidcSettings, claims: dict[str, Any]) -> str | None:
    """admin or viewer by email, email domain or group claim; None: not allowed."""
    email = str(claims.get("email") or "").strip().casefold()
    if claims.get("email_verified") is False:
        email = ""  # the provider says the address is not proven: it grants nothing
    domain = email.rpartition("@")[2] if "@" in email else ""
    raw = claims.get(settings.groups_claim) or []
    groups = {str(g) for g in raw} if isinstance(raw, list) else {str(raw)}

    def matches(emails: list[str], domains: list[str], allowed: list[str]) -> bool:
        return bool((email and email in {e.casefold() for e in emails})
                    or (domain and domain in {d.casefold().lstrip("@") for d in domains})
                    or groups & set(allowed))

    if matches(settings.admin_emails, settings.admin_domains, settings.admin_groups):
        return ADMIN
    if matches(settings.viewer_emails, settings.viewer_domains, settings.viewer_groups):
        return VIEWER
    return None


@dataclass
class Provider:
    """One configured issuer: its discovery document and keys, fetched when first needed."""

    settings: OidcSettings
    # Started sign-ins, in the database: the provider may send the browser back to any
    # replica. Kept PENDING_S at most, keyed by a hash of the state, and used up once.
    pending: ExpiringStore
    clock: Callable[[], float] = time.monotonic
    _discovery: dict[str, Any] | None = None
    _keys: jwt.PyJWKSet | None = None
    _keys_at: float = -1e9
    _http: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    def _client(self) -> aiohttp.ClientSession:
        if self._http is None:
            self._http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.settings.timeout_s))
        return self._http

    async def _get_json(self, url: str) -> dict[str, Any]:
        async with self._client().get(url) as response:
            if response.status != 200:
                raise Refused(PROVIDER_SAID_NO, f"GET {url} answered HTTP {response.status}")
            try:
                found = await response.json(content_type=None)
            except ValueError:
                found = None
        if not isinstance(found, dict):
            raise Refused(PROVIDER_SAID_NO, f"GET {url} did not answer a JSON object")
        return found

    async def discovery(self) -> dict[str, Any]:
        if self._discovery is None:
            issuer = self.settings.issuer.rstrip("/")
            found = await self._get_json(issuer + "/.well-known/openid-configuration")
            if str(found.get("issuer", "")).rstrip("/") != issuer:  # OIDC Discovery §4.3
                raise Refused(PROVIDER_SAID_NO, f"the discovery document names issuer "
                              f"{found.get('issuer')!r}, not {issuer!r}")
            for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(found.get(name), str):
                    raise Refused(PROVIDER_SAID_NO, f"the discovery document has no {name}")
            self._discovery = found
        return self._discovery

    async def start(self, redirect_uri: str, next_: str) -> tuple[str, str]:
        """(state, the provider's authorization URL) for a new sign-in."""
        found = await self.discovery()
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(64)
        await asyncio.to_thread(self.pending.put, _pending_key(state), asdict(
            Pending(nonce, verifier, next_, redirect_uri)), PENDING_S)
        query = urlencode({
            "response_type": "code", "client_id": self.settings.client_id,
            "redirect_uri": redirect_uri, "scope": " ".join(self.settings.scopes),
            "state": state, "nonce": nonce, "code_challenge": challenge_of(verifier),
            "code_challenge_method": "S256"})
        endpoint = found["authorization_endpoint"]
        return state, f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"

    async def take(self, state: str, cookie_state: str) -> Pending:
        """The pending sign-in for this callback, used up: a state is good once, and only in
        the browser that started it (its cookie)."""
        if not state or not same_secret(state, cookie_state or ""):
            raise Refused(NOT_STARTED, "the callback's state does not match this browser's")
        found = await asyncio.to_thread(self.pending.take, _pending_key(state))
        if found is None:
            raise Refused(NOT_STARTED, "the callback's state is unknown, used or expired")
        return Pending(**found)

    async def finish(self, pending: Pending, code: str) -> Person:
        """Exchange the code, verify the ID token, decide the role; Refused otherwise."""
        claims = await self._verified(await self._id_token(pending, code), pending.nonce)
        role = role_of(self.settings, claims)
        email = str(claims.get("email") or "")
        if role is None:
            who = email or f"subject {claims.get('sub')}"
            raise Refused(f"The account {who} is not allowed to use this console; ask an "
                          "admin to allow it.", f"{who} matches no admin or viewer rule")
        return Person(email, role)

    async def _id_token(self, pending: Pending, code: str) -> str:
        found = await self.discovery()
        form = {"grant_type": "authorization_code", "code": code,
                "redirect_uri": pending.redirect_uri, "code_verifier": pending.verifier,
                "client_id": self.settings.client_id}
        async with self._client().post(found["token_endpoint"], data=form,
                                       headers=self._client_auth()) as response:
            if response.status != 200:  # the body may echo what we sent: not logged
                raise Refused(PROVIDER_SAID_NO,
                              f"the token endpoint answered HTTP {response.status}")
            try:
                body = await response.json(content_type=None)
            except ValueError:
                body = None
        token = body.get("id_token") if isinstance(body, dict) else None
        if not isinstance(token, str):
            raise Refused(PROVIDER_SAID_NO, "the token response has no id_token")
        return token

    def _client_auth(self) -> dict[str, str]:
        """client_secret_basic (RFC 6749 §2.3.1: each part form-encoded, then base64)."""
        secret = self.settings.client_secret
        if secret is None:
            return {}
        pair = f"{quote_plus(self.settings.client_id)}:{quote_plus(secret.get_secret_value())}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}

    async def _key(self, kid: str | None) -> Any:
        """The provider's signing key for `kid`; the key set is re-read when a kid is new
        (a rotation), at most once a minute."""
        for attempt in range(2):
            if self._keys is not None:
                for key in self._keys.keys:
                    if kid is None or key.key_id == kid:
                        return key.key
            if attempt or self.clock() - self._keys_at < 60:
                break
            self._keys_at = self.clock()
            found = await self._get_json((await self.discovery())["jwks_uri"])
            try:
                self._keys = jwt.PyJWKSet.from_dict(found)
            except jwt.PyJWTError as exc:
                raise Refused(UNVERIFIED, f"the provider's key set is unusable: {exc}") from None
        raise Refused(UNVERIFIED, f"no key {kid!r} in the provider's key set")

    async def _verified(self, token: str, nonce: str) -> dict[str, Any]:
        found = await self.discovery()
        offered = set(found.get("id_token_signing_alg_values_supported") or ["RS256"])
        algorithms = sorted(offered & SAFE_ALGORITHMS) or ["RS256"]
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            claims = jwt.decode(token, await self._key(kid), algorithms=algorithms,
                                audience=self.settings.client_id, issuer=found["issuer"],
                                leeway=LEEWAY_S,
                                options={"require": ["exp", "iat", "iss", "aud", "sub"]})
        except jwt.PyJWTError as exc:
            raise Refused(UNVERIFIED, f"the ID token was refused: {exc}") from None
        if not same_secret(str(claims.get("nonce", "")), nonce):
            raise Refused(UNVERIFIED, "the ID token's nonce is not this sign-in's")
        audience = claims.get("aud")
        if isinstance(audience, list) and len(audience) > 1 and \
                claims.get("azp") != self.settings.client_id:
            raise Refused(UNVERIFIED, "the ID token was issued to another party (azp)")
        return dict(claims)
