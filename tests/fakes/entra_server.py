"""A fake Microsoft Entra token service over HTTPS: OIDC discovery and the client credentials
grant with a client secret or a certificate's client assertion, as Microsoft documents them
(v2.0 endpoints; errors carry AADSTS codes in `error_codes`)."""

from __future__ import annotations

import base64
import secrets
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import jwt
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from tests.fakes.http import LocalServer
from tests.fakes.tls import local_ca

TENANT = "tenant-1"
CLIENT_ID = "app-id-1"
SECRET = "app-secret-1"
TOKEN = "graph-token-1"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def thumbprint(cert: x509.Certificate, algorithm: hashes.HashAlgorithm) -> str:
    """base64url of the DER certificate's hash: the x5t (SHA-1) or x5t#S256 header value."""
    return base64.urlsafe_b64encode(cert.fingerprint(algorithm)).rstrip(b"=").decode()


def _names(header: dict[str, Any], name: str, cert: x509.Certificate,
           algorithm: hashes.HashAlgorithm) -> bool:
    """Whether the header's thumbprint is the certificate's (msal pads base64url with '=';
    Entra accepts both, so compare the bytes)."""
    value = str(header.get(name) or "")
    try:
        found = base64.urlsafe_b64decode(value + "=" * (-len(value.rstrip("=")) % 4))
    except ValueError:
        return False
    return bool(value) and found == cert.fingerprint(algorithm)


class Refusal(Exception):
    def __init__(self, status: int, error: str, code: int, text: str) -> None:
        super().__init__(text)
        self.status, self.error, self.code = status, error, code


class FakeEntra(LocalServer):
    """One tenant and one app, which authenticates with `secret` or `certificate` (either may
    be None). `issue` makes each access token; `expires_in` is its lifetime."""

    def __init__(self) -> None:
        super().__init__(local_ca().server_context())
        self.tenant, self.client_id = TENANT, CLIENT_ID
        self.secret: str | None = SECRET
        self.certificate: x509.Certificate | None = None
        self.issue: Callable[[], str] = lambda: TOKEN
        self.expires_in = 3599
        self.token_requests: list[dict[str, str]] = []
        self.assertions: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (header, claims)
        self.discoveries = 0
        self.app.router.add_get("/{tenant}/v2.0/.well-known/openid-configuration",
                                self._discovery)
        self.app.router.add_post("/{tenant}/oauth2/v2.0/token", self._token)

    def token_endpoint(self, tenant: str = TENANT) -> str:
        return f"{self.url}/{tenant}/oauth2/v2.0/token"

    @staticmethod
    def _error(refusal: Refusal) -> web.Response:
        """Microsoft's error body: the AADSTS text, trace and correlation ids, the codes."""
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        trace, correlation = str(uuid.uuid4()), str(uuid.uuid4())
        return web.json_response({
            "error": refusal.error,
            "error_description": f"AADSTS{refusal.code}: {refusal}\r\nTrace ID: {trace}\r\n"
                                 f"Correlation ID: {correlation}\r\nTimestamp: {now}",
            "error_codes": [refusal.code], "timestamp": now, "trace_id": trace,
            "correlation_id": correlation,
            "error_uri": f"https://login.microsoftonline.com/error?code={refusal.code}"},
            status=refusal.status)

    def _tenant(self, request: web.Request) -> str:
        tenant = request.match_info["tenant"]
        if tenant != self.tenant:
            raise Refusal(400, "invalid_tenant", 90002, f"Tenant '{tenant}' not found. Check "
                          "to make sure you have the correct tenant ID and are signing into "
                          "the correct cloud.")
        return tenant

    async def _discovery(self, request: web.Request) -> web.Response:
        self.discoveries += 1
        try:
            tenant = self._tenant(request)
        except Refusal as refusal:
            return self._error(refusal)
        base = f"{self.url}/{tenant}"
        return web.json_response({
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "token_endpoint_auth_methods_supported": [
                "client_secret_post", "private_key_jwt", "client_secret_basic"],
            "jwks_uri": f"{base}/discovery/v2.0/keys",
            "response_modes_supported": ["query", "fragment", "form_post"],
            "subject_types_supported": ["pairwise"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "issuer": f"{base}/v2.0", "request_uri_parameter_supported": False,
            "userinfo_endpoint": "https://graph.microsoft.com/oidc/userinfo",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
            "http_logout_supported": True, "frontchannel_logout_supported": True,
            "end_session_endpoint": f"{base}/oauth2/v2.0/logout",
            "claims_supported": ["sub", "iss", "cloud_instance_name", "cloud_instance_host_name",
                                 "cloud_graph_host_name", "msgraph_host", "aud", "exp", "iat",
                                 "auth_time", "acr", "nonce", "preferred_username", "name",
                                 "tid", "ver", "at_hash", "c_hash", "email"],
            "kerberos_endpoint": f"{base}/kerberos", "tenant_region_scope": "EU",
            "cloud_instance_name": "microsoftonline.com",
            "cloud_graph_host_name": "graph.windows.net", "msgraph_host": "graph.microsoft.com",
            "rbac_url": "https://pas.windows.net"})

    async def _token(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.token_requests.append(form)
        try:
            self._tenant(request)
            self._authenticate(form, self.token_endpoint(request.match_info["tenant"]))
        except Refusal as refusal:
            return self._error(refusal)
        return web.json_response({"token_type": "Bearer", "expires_in": self.expires_in,
                                  "ext_expires_in": self.expires_in,
                                  "access_token": self.issue()})

    def _authenticate(self, form: dict[str, str], endpoint: str) -> None:
        if form.get("grant_type") != "client_credentials":
            raise Refusal(400, "unsupported_grant_type", 70003, "The app requested an "
                          "unsupported grant type.")
        if form.get("client_id") != self.client_id:
            raise Refusal(400, "unauthorized_client", 700016, f"Application with identifier "
                          f"'{form.get('client_id')}' was not found in the directory.")
        if not form.get("scope", "").endswith("/.default"):
            raise Refusal(400, "invalid_scope", 1002012, "The provided value for scope is "
                          "not valid. Client credential flows must have a scope value with "
                          "/.default suffixed to the resource identifier.")
        if "client_assertion" in form:
            return self._assertion(form, endpoint)
        if "client_secret" not in form:
            raise Refusal(401, "invalid_client", 7000218, "The request body must contain the "
                          "following parameter: 'client_assertion' or 'client_secret'.")
        if self.secret is None or not secrets.compare_digest(
                form["client_secret"].encode(), self.secret.encode()):
            raise Refusal(401, "invalid_client", 7000215, "Invalid client secret provided. "
                          "Ensure the secret being sent in the request is the client secret "
                          f"value, not the client secret ID, for a secret added to app "
                          f"'{self.client_id}'.")

    def _assertion(self, form: dict[str, str], endpoint: str) -> None:
        """The JWT of Microsoft's certificate credentials: x5t#S256 (or legacy x5t) names a
        certificate of the app, whose public key must verify the signature (PS256/RS256);
        aud is the token endpoint, iss and sub the client id."""
        assertion = form["client_assertion"]
        try:
            header = jwt.get_unverified_header(assertion)
        except jwt.PyJWTError:
            header = {}
        cert = self.certificate
        if form.get("client_assertion_type") != ASSERTION_TYPE or cert is None or not (
                _names(header, "x5t#S256", cert, hashes.SHA256())
                or _names(header, "x5t", cert, hashes.SHA1())):
            raise Refusal(401, "invalid_client", 700027, "Client assertion failed signature "
                          "validation. [Reason - The key was not found.]")
        try:
            claims = jwt.decode(assertion, cert.public_key(), algorithms=["PS256", "RS256"],
                                audience=endpoint, options={"require": [
                                    "aud", "exp", "iss", "jti", "sub"]})  # nbf if sent
        except jwt.InvalidAudienceError:
            raise Refusal(401, "invalid_client", 700023, "Client assertion audience claim "
                          "does not match Realm issuer.") from None
        except jwt.PyJWTError as exc:
            raise Refusal(401, "invalid_client", 700027, "Client assertion contains an "
                          f"invalid signature. [Reason - {type(exc).__name__}]") from None
        if claims["iss"] != self.client_id or claims["sub"] != self.client_id:
            raise Refusal(401, "invalid_client", 700021, "Client assertion application "
                          "identifier doesn't match 'client_id' parameter.")
        self.assertions.append((header, claims))

