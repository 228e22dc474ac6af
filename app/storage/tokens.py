"""Signed-URL tokens in Supabase's shape: a HS256 JWT ``{url: "bucket/path", iat, exp}``, and the URLs
that carry them when Iris serves the objects itself (local disk, S3)."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
import time
from collections.abc import Sequence
from urllib.parse import quote

import jwt

from iris.app.storage.base import SignedUrl

SIGN_ROUTE = "/storage/v1/object/sign/"
"""Where Iris serves signed objects: Supabase's path, so a frontend written against Supabase works."""


def derive_storage_secret(jwt_secret: str) -> str:
    """A key for signed-URL tokens, separate from the auth key (a leaked URL token is no bearer token)."""
    return hmac.new(jwt_secret.encode(), b"iris/local-storage-urls", hashlib.sha256).hexdigest()


def iris_signed_urls(
    public_url: str, secret: str, bucket: str, paths: Sequence[str], expires_in: int
) -> list[SignedUrl]:
    """URLs of Iris's own ``GET /storage/v1/object/sign/{bucket}/{path}?token=…``, in order."""
    expires_at = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=expires_in)
    base = f"{public_url.rstrip('/')}{SIGN_ROUTE}{bucket}/"
    return [
        SignedUrl(
            path=path,
            url=f"{base}{quote(path, safe='/')}?token={sign_object_token(secret, bucket, path, expires_at)}",
            expires_at=expires_at,
        )
        for path in paths
    ]


class TokenRejected(ValueError):
    """Why a signed-URL token was refused.

    ``missing``/``malformed`` (not a JWT at all) are the client's mistake; ``invalid`` (bad signature),
    ``expired`` and ``path_mismatch`` (signed for another object) are refusals.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def sign_object_token(secret: str, bucket: str, path: str, expires_at: dt.datetime) -> str:
    """The ``token`` query parameter for ``bucket/path``, valid until ``expires_at``."""
    now = dt.datetime.now(dt.UTC)
    claims = {"url": f"{bucket}/{path}", "iat": int(now.timestamp()), "exp": int(expires_at.timestamp())}
    return jwt.encode(claims, secret, algorithm="HS256")


def verify_object_token(secret: str, token: str | None, bucket: str, path: str) -> None:
    """Check signature, expiry and that the token was issued for exactly ``bucket/path``.

    A token whose signature checked out is remembered (the most recent :data:`VERIFIED_TOKENS`): a
    conversation sends the same image URLs on every turn. Its expiry is checked every time.
    """
    if not token:
        raise TokenRejected("missing")
    url, expires_at = _verified(secret, token)
    if expires_at <= time.time():
        raise TokenRejected("expired")
    if url != f"{bucket}/{path}":
        raise TokenRejected("path_mismatch")


VERIFIED_TOKENS = 4096


@functools.lru_cache(maxsize=VERIFIED_TOKENS)  # a refusal raises, and is never remembered
def _verified(secret: str, token: str) -> tuple[object, float]:
    try:
        claims = jwt.decode(token, secret, algorithms=["HS256"], options={"require": ["url", "exp"]})
    except jwt.ExpiredSignatureError as exc:
        raise TokenRejected("expired") from exc
    except jwt.InvalidSignatureError as exc:
        raise TokenRejected("invalid") from exc
    except jwt.DecodeError as exc:
        raise TokenRejected("malformed") from exc
    except jwt.InvalidTokenError as exc:
        raise TokenRejected("invalid") from exc
    return claims.get("url"), float(claims["exp"])
