"""Throw-away X.509 for tests: a local CA for HTTPS fakes (msal speaks only to https authorities)
and self-signed app certificates (Entra's certificate credentials)."""

from __future__ import annotations

import datetime
import functools
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

Key = rsa.RSAPrivateKey


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key() -> Key:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def certificate(common_name: str, key: Key, issuer: tuple[x509.Certificate, Key] | None = None,
                *, ca: bool = False, hosts: bool = False) -> x509.Certificate:
    """A certificate for `key`, self-signed unless an (issuer certificate, key) is given."""
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(common_name))
               .issuer_name(issuer[0].subject if issuer else _name(common_name))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if hosts:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256())


def pem(cert: x509.Certificate, key: Key | None = None, password: bytes | None = None) -> bytes:
    """The certificate in PEM, after its private key when one is given."""
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password) if password
        else serialization.NoEncryption())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                encryption) if key else b""
    return private + cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class AppCertificate:
    """What an Entra app registration holds (the certificate) and its owner keeps (the key)."""

    cert: x509.Certificate
    key: Key

    @classmethod
    def new(cls, name: str = "sift-sync") -> AppCertificate:
        key = _key()
        return cls(certificate(name, key), key)

    def pem_file(self, folder: Path, password: bytes | None = None) -> Path:
        path = folder / "sift-app.pem"
        path.write_bytes(pem(self.cert, self.key, password))
        return path

    def pfx_file(self, folder: Path, password: bytes | None = None) -> Path:
        path = folder / "sift-app.pfx"
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password) if password
            else serialization.NoEncryption())
        path.write_bytes(pkcs12.serialize_key_and_certificates(
            b"sift-app", self.key, self.cert, None, encryption))
        return path


@dataclass(frozen=True)
class LocalCa:
    bundle: Path  # the CA certificate, for clients (REQUESTS_CA_BUNDLE)
    chain: Path  # the loopback server's certificate and key

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.chain)
        return context


@functools.cache
def local_ca() -> LocalCa:
    """One CA per test process and a certificate it signed for 127.0.0.1 and localhost."""
    folder = Path(tempfile.mkdtemp(prefix="sift-test-ca-"))
    ca_key, server_key = _key(), _key()
    ca = certificate("Sift test CA", ca_key, ca=True)
    server = certificate("127.0.0.1", server_key, (ca, ca_key), hosts=True)
    (folder / "ca.pem").write_bytes(pem(ca))
    (folder / "server.pem").write_bytes(pem(server, server_key))
    return LocalCa(folder / "ca.pem", folder / "server.pem")
