"""A console password as the settings hold it: a salted scrypt hash from the moment it is read."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Annotated

from pydantic import PlainSerializer, PlainValidator, SecretStr

_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}


def _scrypt(password: str, salt: bytes) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, **_SCRYPT)


@dataclass(frozen=True, repr=False)
class PasswordHash:
    """What is kept of a password: its own salt and digest; the plain text never is."""

    salt: bytes
    digest: bytes

    @classmethod
    def of(cls, password: str) -> PasswordHash:
        salt = secrets.token_bytes(16)
        return cls(salt, _scrypt(password, salt))

    def matches(self, password: str) -> bool:
        return hmac.compare_digest(_scrypt(password, self.salt), self.digest)

    def __repr__(self) -> str:
        return "PasswordHash('**********')"


def _hashed(value: object) -> PasswordHash | None:
    """Settings hash the password while they load, so no later step has to drop it."""
    if value is None or isinstance(value, PasswordHash):
        return value
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if not isinstance(value, str):
        raise ValueError("a password is text")
    return PasswordHash.of(value)


# A settings field: text (or SecretStr) in, a PasswordHash kept; dumped as a mask, like SecretStr.
Password = Annotated[PasswordHash | None, PlainValidator(_hashed),
                     PlainSerializer(lambda h: None if h is None else "**********")]
