"""The key users' MCP tokens are sealed with (Fernet: AES-128-CBC with an HMAC-SHA256, from
``cryptography``), from ``IRIS_MCP_TOKEN_KEY`` or, unset, derived from the JWT secret (ADR 0086)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MIN_PASSPHRASE = 32
_INFO = b"iris mcp token key v1"


class TokenCipher:
    """Seals a JSON object into an opaque string and opens it again; a string sealed with another key
    opens to ``None`` (the grant is then treated as absent: the user signs in again)."""

    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def from_settings(cls, configured: str | None, jwt_secret: str | None) -> TokenCipher:
        """The cipher of ``IRIS_MCP_TOKEN_KEY`` (a Fernet key as is, a passphrase of at least 32
        characters stretched with HKDF-SHA256), else of the JWT secret; :class:`ValueError` when the
        key is too short or there is neither."""
        if configured:
            if _is_fernet_key(configured):
                return cls(configured.encode())
            if len(configured) < MIN_PASSPHRASE:
                raise ValueError(
                    f"IRIS_MCP_TOKEN_KEY must be a Fernet key or at least {MIN_PASSPHRASE} characters"
                )
            return cls(_derived(configured))
        if not jwt_secret:
            raise ValueError("no key for MCP tokens: set IRIS_MCP_TOKEN_KEY (or IRIS_JWT_SECRET)")
        return cls(_derived(jwt_secret))

    def seal(self, value: Mapping[str, Any]) -> str:
        return self._fernet.encrypt(json.dumps(value, separators=(",", ":")).encode()).decode()

    def open(self, sealed: str | None) -> dict[str, Any] | None:
        if not sealed:
            return None
        try:
            found = json.loads(self._fernet.decrypt(sealed.encode()))
        except (InvalidToken, ValueError):
            return None
        return found if isinstance(found, dict) else None


def _is_fernet_key(value: str) -> bool:
    try:
        return len(base64.urlsafe_b64decode(value.encode())) == 32 and len(value) == 44
    except (binascii.Error, ValueError):
        return False


def _derived(secret: str) -> bytes:
    material = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"iris", info=_INFO).derive(secret.encode())
    return base64.urlsafe_b64encode(material)
