"""OpenID Connect for the console through Authlib: discovery, code with PKCE, ID token checks."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote_plus, urlsplit

import httpx2  # the HTTP library under Authlib's httpx integration: its errors name the cause
from authlib.integrations.base_client import OAuthError
from authlib.integrations.base_client.async_app import AsyncOAuth2Mixin
from authlib.integrations.base_client.async_openid import AsyncOpenIDMixin
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc.errors import JoseError

from bot.admin.auth import ADMIN, VIEWER
from bot.settings import OidcSettings
from rag.errors import ConfigError
from rag.safe_compare import same_secret
from storage.expiring import ExpiringStore

# Asymmetric only: "none" would accept an unsigned token, and a symmetric alg would turn the
# client secret into a signing key. Authlib verifies with what discovery offers, so the offer
# is narrowed to these before Authlib reads it.
SAFE_ALGORITHMS = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                   "ES512", "EdDSA", "Ed25519"}
PENDING_S = 600.0  # how long a started sign-in may take at the provider
LEEWAY_S = 60  # clock skew allowed between Sift and the provider


class Refused(Exception):
    """A sign-in that must not succeed: `sentence` is what the person reads; the cause (never
    a token or the secret) goes to the log."""

    def __init__(self, sentence: str, cause: str) -> None:
        super().__init__(cause)
        self.sentence = sentence


class Unreachable(Exception):
    """The provider did not answer at all (connection refused, time-out): the cause."""


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


def _form_encoded_basic(client: Any, method: str, uri: str, headers: dict[str, str],
                        body: str) -> tuple[str, dict[str, str], str]:
    """client_secret_basic as RFC 6749 §2.3.1 has it, each part form-encoded before base64:
    Authlib sends them raw, which breaks a secret holding '+' or '%' at providers that
    decode (Keycloak does)."""
    pair = f"{quote_plus(client.client_id)}:{quote_plus(client.client_secret)}"
    headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return uri, headers, body


class _OpenId(AsyncOAuth2Mixin, AsyncOpenIDMixin):
    """Authlib's asynchronous OAuth 2 and OpenID client (what its Starlette integration is
    made of), without a web framework: the pending sign-ins are Sift's own."""

    client_cls = AsyncOAuth2Client


@contextmanager
def _answers(step: str, verifying: bool = False) -> Iterator[None]:
    """Authlib's and the HTTP library's failures as Refused or Unreachable, the cause named."""
    try:
        yield
    except httpx2.TransportError as exc:
        raise Unreachable(f"{step} failed: {exc!r}") from None
    except httpx2.HTTPStatusError as exc:
        raise Refused(PROVIDER_SAID_NO, f"{step}: {exc.request.url} answered HTTP "
                      f"{exc.response.status_code}") from None
    except OAuthError as exc:  # the error code only: a description may echo what was sent
        raise Refused(PROVIDER_SAID_NO, f"{step}: the provider answered {exc.error}") from None
    except JoseError as exc:
        raise Refused(UNVERIFIED, f"{step} was refused: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:  # a body that is not what was asked for
        raise Refused(UNVERIFIED if verifying else PROVIDER_SAID_NO,
                      f"{step}: {type(exc).__name__}: {exc}") from None


class Provider:
    """One configured issuer: discovery and keys fetched when first needed (a new `kid`
    fetches the keys again: a rotation), sign-ins kept in the database meanwhile."""

    def __init__(self, settings: OidcSettings, pending: ExpiringStore) -> None:
        self.settings = settings
        # Started sign-ins, in the database: the provider may send the browser back to any
        # replica. Kept PENDING_S at most, keyed by a hash of the state, and used up once.
        self.pending = pending
        self._issuer = settings.issuer.rstrip("/")
        self._http = {"scope": " ".join(settings.scopes), "code_challenge_method": "S256",
                      "timeout": settings.timeout_s}
        secret = settings.client_secret
        self._openid = _OpenId(
            None, client_id=settings.client_id, client_kwargs=self._http,
            client_secret=secret.get_secret_value() if secret is not None else None,
            server_metadata_url=self._issuer + "/.well-known/openid-configuration",
            client_auth_methods=[("client_secret_basic", _form_encoded_basic)])
        self._checked = False

    async def discovery(self) -> dict[str, Any]:
        """The discovery document, checked once (OIDC Discovery §4.3: it names our issuer)."""
        with _answers("discovery"):
            found: dict[str, Any] = await self._openid.load_server_metadata()
        if not self._checked:
            problem = next((f"the discovery document has no {name}" for name in (
                "authorization_endpoint", "token_endpoint", "jwks_uri")
                if not isinstance(found.get(name), str)), None)
            if str(found.get("issuer", "")).rstrip("/") != self._issuer:
                problem = (f"the discovery document names issuer {found.get('issuer')!r}, "
                           f"not {self._issuer!r}")
            if problem is not None:
                found.clear()  # not kept: the next sign-in reads it again
                raise Refused(PROVIDER_SAID_NO, problem)
            offered = found.get("id_token_signing_alg_values_supported") or ["RS256"]
            found["id_token_signing_alg_values_supported"] = [
                a for a in offered if a in SAFE_ALGORITHMS] or ["RS256"]
            self._checked = True
        return found

    async def start(self, redirect_uri: str, next_: str) -> tuple[str, str]:
        """(state, the provider's authorization URL) for a new sign-in."""
        found = await self.discovery()
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(64)
        await asyncio.to_thread(self.pending.put, _pending_key(state), asdict(
            Pending(nonce, verifier, next_, redirect_uri)), PENDING_S)
        async with AsyncOAuth2Client(self.settings.client_id, **self._http) as client:
            url, _ = client.create_authorization_url(
                found["authorization_endpoint"], state=state, code_verifier=verifier,
                nonce=nonce, redirect_uri=redirect_uri)
        return state, str(url)

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
        claims = await self._verified(pending, code)
        role = role_of(self.settings, claims)
        email = str(claims.get("email") or "")
        if role is None:
            who = email or f"subject {claims.get('sub')}"
            raise Refused(f"The account {who} is not allowed to use this console; ask an "
                          "admin to allow it.", f"{who} matches no admin or viewer rule")
        return Person(email, role)

    async def _verified(self, pending: Pending, code: str) -> dict[str, Any]:
        """The ID token's claims: signed by a key of the provider's set with an allowed
        algorithm, from our issuer, for us (aud, and azp when there are several audiences),
        this sign-in's nonce, not expired."""
        found = await self.discovery()
        with _answers("the token exchange"):
            token = await self._openid.fetch_access_token(
                redirect_uri=pending.redirect_uri, code=code, code_verifier=pending.verifier)
        if not isinstance(token.get("id_token"), str):
            raise Refused(PROVIDER_SAID_NO, "the token response has no id_token")
        expected = {"iss": {"essential": True, "value": found["issuer"]},
                    "aud": {"essential": True, "value": self.settings.client_id}}
        with _answers("the ID token", verifying=True):
            claims = await self._openid.parse_id_token(token, pending.nonce, expected,
                                                       leeway=LEEWAY_S)
        return dict(claims)
