"""A fake OpenID Connect provider: discovery, JWKS, authorize (consents at once) and token.

Payloads follow OpenID Connect Discovery 1.0 §3/§4 and Core 1.0 §3.1.3.3 (token response);
PKCE (RFC 7636, S256) and single-use codes are enforced as real providers do. ID tokens are
signed with a test RSA key; `claims`, `signer`, `signer_kid` and `algorithm` let a test play a
forged or stale token, `rotate()` a provider that replaces its signing key.

As an OAuth 2.1 authorization server it also issues JWT access tokens (RFC 9068's claims,
`typ: at+jwt`), their `aud` the resource the authorization request named (RFC 8707);
`access_token(resource)` makes one for a test directly.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus, urlencode

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.http import LocalServer

KID = "test-key-1"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str
    resource: str = ""
    used: bool = False


@dataclass
class Account:
    """Who consents at /authorize."""

    email: str = "ada@example.com"
    sub: str = "user-1"
    email_verified: bool = True
    groups: list[str] = field(default_factory=list)


class FakeOidc(LocalServer):
    def __init__(self, client_id: str, client_secret: str) -> None:
        super().__init__()
        self.client_id, self.client_secret = client_id, client_secret
        self.key = new_key()
        self.kid = KID
        self.signer: rsa.RSAPrivateKey = self.key  # a test swaps in another key
        self.signer_kid = KID  # the kid the ID tokens name
        self.algorithm = "RS256"  # "none" or "HS256" (keyed with the secret): forgeries
        self.algorithms = ["RS256"]  # what discovery offers
        self.issuer: str | None = None  # what discovery names; None: this server's URL
        self.jwks_requests = 0
        self.account = Account()
        self.claims: dict[str, Any] = {}  # overrides for the next ID tokens (aud, exp, nonce)
        self.grants: dict[str, Grant] = {}
        self.authorize_queries: list[dict[str, str]] = []
        self.token_forms: list[dict[str, str]] = []
        self.token_auth: list[str] = []
        self.token_page: str | None = None  # an HTML page instead of the token response
        self.app.router.add_get("/.well-known/openid-configuration", self.discovery)
        self.app.router.add_get("/jwks", self.jwks)
        self.app.router.add_get("/authorize", self.authorize)
        self.app.router.add_post("/token", self.token)

    async def discovery(self, _: web.Request) -> web.Response:
        return web.json_response({
            "issuer": self.issuer or self.url, "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token", "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": self.algorithms,
            "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
            "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nonce", "email",
                                 "email_verified", "groups"]})

    def rotate(self) -> None:
        """A new signing key under a new kid; the key set publishes only the new one."""
        self.key = self.signer = new_key()
        self.kid = self.signer_kid = f"key-{secrets.token_hex(4)}"

    async def jwks(self, _: web.Request) -> web.Response:
        self.jwks_requests += 1
        public = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return web.json_response({"keys": [{**public, "kid": self.kid, "use": "sig",
                                            "alg": "RS256"}]})

    async def authorize(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.authorize_queries.append(query)
        if (query.get("response_type") != "code" or query.get("client_id") != self.client_id
                or query.get("code_challenge_method") != "S256"
                or "openid" not in query.get("scope", "").split()):
            raise web.HTTPBadRequest(text="invalid_request")
        code = secrets.token_urlsafe(16)
        self.grants[code] = Grant(self.client_id, query["redirect_uri"],
                                  query["code_challenge"], query.get("nonce", ""),
                                  query.get("resource", ""))
        back = urlencode({"code": code, "state": query.get("state", "")})
        raise web.HTTPFound(f"{query['redirect_uri']}?{back}")

    def _client_ok(self, request: web.Request) -> bool:
        """client_secret_basic as RFC 6749 §2.3.1 defines it: base64 of the form-encoded id
        and secret, joined by a colon (so a ':' inside the secret arrives as %3A)."""
        scheme, _, encoded = request.headers.get("Authorization", "").partition(" ")
        self.token_auth.append(scheme)
        try:
            pair = base64.b64decode(encoded, validate=True).decode()
        except ValueError:
            return False
        client_id, _, secret = pair.partition(":")
        return scheme == "Basic" and unquote_plus(client_id) == self.client_id and \
            secrets.compare_digest(unquote_plus(secret).encode(), self.client_secret.encode())

    async def token(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.token_forms.append(form)
        if not self._client_ok(request):
            return web.json_response({"error": "invalid_client"}, status=401)
        grant = self.grants.get(form.get("code", ""))
        verifier = form.get("code_verifier", "").encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
        if (form.get("grant_type") != "authorization_code" or grant is None or grant.used
                or grant.redirect_uri != form.get("redirect_uri")
                or challenge.decode() != grant.challenge):
            return web.json_response({"error": "invalid_grant"}, status=400)
        grant.used = True  # a code is good once
        if self.token_page is not None:
            return web.Response(text=self.token_page, content_type="text/html")
        resource = form.get("resource") or grant.resource
        access = self.access_token(resource) if resource else secrets.token_urlsafe(16)
        return web.json_response({"access_token": access,
                                  "token_type": "Bearer", "expires_in": 3600,
                                  "id_token": self.id_token(grant.nonce)})

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        a = self.account
        claims = {"iss": self.url, "sub": a.sub, "aud": self.client_id, "iat": now,
                  "exp": now + 300, "nonce": nonce, "email": a.email,
                  "email_verified": a.email_verified, "groups": a.groups, **self.claims}
        key: Any = {"RS256": self.signer, "none": None, "HS256": self.client_secret}
        return jwt.encode(claims, key[self.algorithm], algorithm=self.algorithm,
                          headers={"kid": self.signer_kid})

    def access_token(self, resource: str | list[str], **overrides: Any) -> str:
        """A JWT access token for `resource` as `account`, signed as the ID tokens are
        (`signer`, `signer_kid`, `algorithm`); `overrides` replace or add claims, a None
        value drops one."""
        now = int(time.time())
        a = self.account
        claims = {"iss": self.url, "sub": a.sub, "aud": resource, "client_id": "claude-client",
                  "scope": "openid email", "iat": now, "exp": now + 300,
                  "jti": secrets.token_hex(8), "email": a.email,
                  "email_verified": a.email_verified, "groups": a.groups, **overrides}
        claims = {k: v for k, v in claims.items() if v is not None}
        key: Any = {"RS256": self.signer, "none": None, "HS256": self.client_secret}
        return jwt.encode(claims, key[self.algorithm], algorithm=self.algorithm,
                          headers={"kid": self.signer_kid, "typ": "at+jwt"})
