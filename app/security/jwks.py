"""An identity provider's signing keys (its JWKS), fetched over HTTP and cached by its cache headers.

A token whose ``kid`` is in a fresh key set is verified without any I/O. The set is fetched again when
its ``Cache-Control: max-age`` (or ``IRIS_AUTH_JWKS_CACHE_SECONDS``) runs out, or when a token names a
``kid`` the set lacks (a rotation) — but never more often than every ``IRIS_AUTH_JWKS_REFETCH_SECONDS``,
however many requests ask, and concurrent requests wait for one fetch rather than each making their
own. A failed fetch keeps the keys already known working (the provider being down does not sign
everyone out); a key never seen is then simply unknown, a 401, never a 500.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

import anyio
import httpx
import jwt

log = logging.getLogger(__name__)

FETCH_TIMEOUT = httpx.Timeout(5.0)
"""The longest one fetch of the discovery document or the key set may take."""
MAX_CACHE_SECONDS = 86_400.0
"""A key set is fetched again at least daily, whatever its headers say."""
_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-)?max-age\s*=\s*\"?(\d+)\"?", re.IGNORECASE)
_NO_CACHE = re.compile(r"(?:^|,)\s*(?:no-store|no-cache)\b", re.IGNORECASE)
_KTY_BY_ALG = {"RS256": "RSA", "RS384": "RSA", "RS512": "RSA", "PS256": "RSA", "ES256": "EC", "EdDSA": "OKP"}
SIGNING_ALGORITHMS = frozenset(_KTY_BY_ALG)
"""The asymmetric algorithms Iris verifies an identity provider's tokens with."""


class KeySetUnavailable(Exception):
    """One fetch of the discovery document or the key set failed (logged; the cached keys stay)."""


class KeyMismatch(Exception):
    """The token's ``alg`` is not one its ``kid``'s key may be used with."""


class KeySet:
    """The keys of one identity provider, by ``kid``."""

    def __init__(
        self,
        *,
        jwks_url: str | None,
        issuer: str | None,
        default_ttl: float,
        refetch_seconds: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if jwks_url is None and issuer is None:
            raise ValueError("a key set needs its URL or an issuer to discover it from")
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.default_ttl = default_ttl
        self.refetch_seconds = refetch_seconds
        self.generation = 0
        """Goes up whenever the keys change: a token verified under one generation is re-checked after."""
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._jwks: dict[str, dict[str, Any]] = {}
        self._parsed: dict[tuple[str, str], jwt.PyJWK] = {}
        self._fresh_until = 0.0
        self._last_attempt = float("-inf")
        self._lock = anyio.Lock()

    async def key_for(self, kid: str, alg: str) -> jwt.PyJWK | None:
        """The key ``kid`` for verifying an ``alg`` token, fetching the set first if it is stale or lacks
        ``kid`` (rate-limited); ``None`` when the provider has no such key. :class:`KeyMismatch` when the
        key exists but not for ``alg``."""
        now = time.monotonic()
        stale = now >= self._fresh_until
        if (stale or kid not in self._jwks) and now - self._last_attempt >= self.refetch_seconds:
            await self._refresh(requested_at=now)
        jwk = self._jwks.get(kid)
        if jwk is None:
            return None
        return self._parsed_key(kid, jwk, alg)

    async def aclose(self) -> None:
        """Close the HTTP client (app shut-down)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _parsed_key(self, kid: str, jwk: dict[str, Any], alg: str) -> jwt.PyJWK:
        parsed = self._parsed.get((kid, alg))
        if parsed is not None:
            return parsed
        if jwk.get("kty") != _KTY_BY_ALG.get(alg) or jwk.get("alg", alg) != alg:
            raise KeyMismatch(f"key {kid!r} is not a {alg} key")
        try:
            parsed = jwt.PyJWK(jwk, algorithm=alg)
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError) as exc:
            raise KeyMismatch(f"key {kid!r} does not fit {alg}: {exc}") from exc
        self._parsed[(kid, alg)] = parsed
        return parsed

    async def _refresh(self, *, requested_at: float) -> None:
        """Fetch the set once for everyone who asked at or before ``requested_at``."""
        async with self._lock:
            if self._last_attempt >= requested_at:
                return  # another request fetched it while this one waited
            self._last_attempt = time.monotonic()
            try:
                keys, ttl = await self._fetch_keys()
            except KeySetUnavailable as exc:
                log.warning(
                    "jwks_unavailable: %s; the %d key(s) already known keep working",
                    exc,
                    len(self._jwks),
                    extra={"code": "jwks_unavailable"},
                )
                return
            if keys != self._jwks:
                self._jwks, self._parsed = keys, {}
                self.generation += 1
            self._fresh_until = time.monotonic() + ttl

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=FETCH_TIMEOUT, transport=self._transport)
        return self._client

    async def _fetch_keys(self) -> tuple[dict[str, dict[str, Any]], float]:
        url = self.jwks_url or await self._discover()
        body, ttl = await self._get_json(url)
        listed = body.get("keys") if isinstance(body, dict) else None
        if not isinstance(listed, list):
            raise KeySetUnavailable(f"{url} has no 'keys' list")
        keys: dict[str, dict[str, Any]] = {}
        for jwk in listed:
            if not isinstance(jwk, dict) or not isinstance(jwk.get("kid"), str):
                continue  # a key without a kid can never be chosen
            if jwk.get("kty") not in ("RSA", "EC", "OKP") or jwk.get("use", "sig") != "sig":
                continue  # symmetric or encryption keys are never used to verify tokens
            keys[jwk["kid"]] = jwk
        return keys, ttl

    async def _discover(self) -> str:
        """The discovery document's ``jwks_uri``, remembered once found."""
        assert self.issuer is not None
        url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
        document, _ = await self._get_json(url)
        if not isinstance(document, dict) or not isinstance(document.get("jwks_uri"), str):
            raise KeySetUnavailable(f"{url} names no jwks_uri")
        if document.get("issuer") != self.issuer:
            raise KeySetUnavailable(
                f"{url} says its issuer is {document.get('issuer')!r}, not IRIS_AUTH_ISSUER={self.issuer!r}"
            )
        self.jwks_url = document["jwks_uri"]
        return self.jwks_url

    async def _get_json(self, url: str) -> tuple[object, float]:
        try:
            response = await self._http().get(url, headers={"accept": "application/json"})
            response.raise_for_status()
            body = json.loads(response.content)
        except (httpx.HTTPError, ValueError) as exc:
            raise KeySetUnavailable(f"GET {url}: {exc!r}") from exc
        return body, self._ttl(response.headers.get("cache-control", ""))

    def _ttl(self, cache_control: str) -> float:
        """Seconds the response may be trusted: its ``max-age``, bounded below by the refetch interval
        (``no-store`` asks for a fetch per use, which is exactly what this must not do)."""
        match = _MAX_AGE.search(cache_control)
        if match is not None:
            seconds = float(match[1])
        elif _NO_CACHE.search(cache_control):
            seconds = 0.0
        else:
            seconds = self.default_ttl
        return min(max(seconds, self.refetch_seconds), MAX_CACHE_SECONDS)
