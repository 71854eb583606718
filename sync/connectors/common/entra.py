"""Microsoft Entra app tokens through msal: a client secret or a certificate, cached until near
expiry (msal renews five minutes early)."""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msal
import requests
from pydantic import SecretStr

from rag.errors import SyncError
from sync.connectors.common.microsoft import GRAPH_SCOPE, PUBLIC_CLOUD

PFX = (".pfx", ".p12")
# What an AADSTS code says is wrong (Microsoft's error code reference), so the sentence names
# the one setting to fix: the credential, the app id or the tenant.
CREDENTIAL_CODES = {7000215, 7000222, 7000218,  # client secret invalid, expired, missing
                    700027, 700024, 700021, 700023}  # client assertion: key, time, iss, aud
APP_CODES = {700016, 7000112}  # app not found in the directory, or disabled
TENANT_CODES = {90002, 900023, 90023}  # tenant not found, or not a valid tenant id


@dataclass(frozen=True)
class EntraNames:
    """How the person configures each part, for a sentence that names the one at fault."""

    tenant: str
    client_id: str
    secret: str
    certificate: str
    authority: str


@dataclass(frozen=True)
class EntraApp:
    """An app registration's credentials: a client secret, or a certificate (a PEM file with
    the private key and the certificate, or the key alone and `thumbprint`; or a PFX)."""

    tenant: str
    client_id: str
    secret: SecretStr | None = None
    certificate: Path | None = None
    thumbprint: str = ""  # the certificate's SHA-1 thumbprint (hex), for a PEM key alone
    password: SecretStr | None = None  # of an encrypted PEM key or of the PFX
    authority: str = PUBLIC_CLOUD
    timeout_s: float = 30.0


class EntraError(Exception):
    """No token: `sentence` names the setting to check; the message is the cause for the log.
    Neither ever holds a token or a secret."""

    def __init__(self, sentence: str, cause: str) -> None:
        super().__init__(cause)
        self.sentence = sentence


class EntraToken:
    """Access tokens for one app and one scope, from msal's in-memory cache while they last.
    msal is synchronous: each call runs on a worker thread, one at a time."""

    def __init__(self, app: EntraApp, names: EntraNames, scope: str = GRAPH_SCOPE) -> None:
        self._app, self._names, self._scope = app, names, scope
        self._client: msal.ConfidentialClientApplication | None = None
        self._lock = threading.Lock()

    async def get(self, refused: str = "") -> str:
        """A token; `refused` is one the resource just answered 401 to, so not from cache."""
        return await asyncio.to_thread(self._acquire, refused)

    def _acquire(self, refused: str) -> str:
        with self._lock:
            try:
                client = self._client or self._build()
                result = client.acquire_token_for_client(scopes=[self._scope])
                if refused and result.get("access_token") == refused:
                    client.remove_tokens_for_client()  # revoked or expired early
                    result = client.acquire_token_for_client(scopes=[self._scope])
            except requests.RequestException as exc:
                raise EntraError(f"Microsoft Entra at {self._app.authority} could not be "
                                 f"reached ({type(exc).__name__}).",
                                 f"token request failed: {exc!r}") from None
        token = result.get("access_token")
        if isinstance(token, str) and token:
            return token
        error = str(result.get("error") or "no access_token")
        codes = {int(c) for c in result.get("error_codes") or () if str(c).isdigit()}
        first = str(result.get("error_description") or "").splitlines()[:1]
        raise EntraError(self._sentence(error, codes), f"token request for app "
                         f"{self._app.client_id} in {self._app.tenant}: {error} {first}")

    def _build(self) -> msal.ConfidentialClientApplication:
        a = self._app
        credential = self._credential()
        try:
            self._client = msal.ConfidentialClientApplication(
                a.client_id, client_credential=credential, timeout=a.timeout_s,
                authority=f"{a.authority.rstrip('/')}/{a.tenant}",
                # The authority is the operator's own setting (a national cloud, a test
                # double): no look-up at login.microsoftonline.com to vouch for it.
                instance_discovery=False)
        except ValueError as exc:  # tenant discovery refused, or a key that does not load
            said = f"{exc} (after: {exc.__context__})" if exc.__context__ else str(exc)
            codes = {int(c) for c in re.findall(r"AADSTS(\d+)", said)}  # msal re-raises
            if codes:
                raise EntraError(self._sentence("tenant discovery failed", codes),
                                 f"msal: {said}") from None
            n = self._names
            fault = n.certificate if a.certificate else f"{n.tenant} and {n.authority}"
            raise EntraError(f"Microsoft Entra could not be set up for tenant {a.tenant} at "
                             f"{a.authority}: {str(exc).splitlines()[0][:200]}; check {fault}.",
                             f"msal: {said}") from None
        return self._client

    def _credential(self) -> str | dict[str, Any]:
        """msal's form of the credential: the secret, or the certificate file's parts."""
        a = self._app
        if a.certificate is None:
            return a.secret.get_secret_value() if a.secret is not None else ""
        password = a.password.get_secret_value() if a.password is not None else None
        if a.certificate.suffix.lower() in PFX:
            return {"private_key_pfx_path": str(a.certificate), "passphrase": password}
        try:
            text = a.certificate.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise EntraError(f"The certificate {a.certificate} could not be read "
                             f"({type(exc).__name__}); check {self._names.certificate}.",
                             f"certificate: {exc!r}") from None
        if a.thumbprint:
            return {"private_key": text, "thumbprint": a.thumbprint, "passphrase": password}
        # The certificate beside the key: msal takes its SHA-256 thumbprint (x5t#S256).
        return {"private_key": text, "public_certificate": text, "passphrase": password}

    def _sentence(self, error: str, codes: set[int]) -> str:
        n = self._names
        credential = n.certificate if self._app.certificate else n.secret
        fault = (credential if codes & CREDENTIAL_CODES else n.client_id if codes & APP_CODES
                 else n.tenant if codes & TENANT_CODES
                 else f"{credential}, {n.client_id} and {n.tenant}")
        code = f" AADSTS{min(codes)}" if codes else ""
        return f"Microsoft Entra refused the app's credentials ({error}{code}); check {fault}."


class SourceToken:
    """A source's app token, the way RenewingToken asks for one: one per connector, so its
    cache serves every run until near expiry; no token is the source's one sentence."""

    def __init__(self, app: EntraApp, names: EntraNames, label: str,
                 scope: str = GRAPH_SCOPE) -> None:
        self._entra, self._label = EntraToken(app, names, scope), label

    async def __call__(self, refused: str) -> str:
        try:
            return await self._entra.get(refused)
        except EntraError as exc:
            raise SyncError(str(exc), user_message=f"{self._label}: {exc.sentence}") from None
