"""Supabase Storage through its REST API (storage-api), for deployments that keep uploads on Supabase.

It speaks the same endpoints as supabase-js's ``StorageFileApi`` with the service-role key, so no SDK is
needed and an upload streams from the incoming request straight to Supabase without being held in memory.

storage-api answers every 4xx with HTTP 400 and puts the real status in the body's ``statusCode``
(``{"statusCode": "404", "error": "not_found", …}``); some deployments send the real HTTP status instead.
Both are read the same way here. Error messages never carry the service key.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from iris.app.storage.base import ObjectNotFound, SignedUrl, StorageError, file_chunks

BUCKET_MISSING = "Bucket not found"


async def _nonempty(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """The caller's chunks as an async generator, one by one (never joined), skipping empty ones."""
    async for chunk in chunks:
        if chunk:
            yield chunk


def _meant_status(response: httpx.Response) -> tuple[int, str]:
    """The status Supabase means (the body's ``statusCode`` when it answered 400) and its ``error`` name."""
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        return status, ""
    if not isinstance(body, dict):
        return status, ""
    error = str(body.get("error") or "")[:80]
    if status == 400:
        try:
            status = int(body.get("statusCode", 400))
        except (TypeError, ValueError):
            status = 400
    return status, error


class SupabaseStorage:
    """One bucket of a Supabase project, addressed with the service-role key.

    Without ``client`` it makes (and in :meth:`aclose` closes) its own ``httpx.AsyncClient`` with
    ``timeout``; an injected client is used as is and left open.
    """

    def __init__(
        self,
        base_url: str,
        service_key: str,
        bucket: str,
        *,
        client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.bucket = bucket
        self._api = f"{base_url.rstrip('/')}/storage/v1"
        self._service_key = service_key
        self._headers = {"Authorization": f"Bearer {service_key}", "apikey": service_key}
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(timeout=timeout)

    def __repr__(self) -> str:
        return f"SupabaseStorage({self._api!r}, bucket={self.bucket!r})"

    # -- operations ----------------------------------------------------------------------------------

    async def put(self, path: str, chunks: AsyncIterable[bytes], *, content_type: str) -> None:
        headers = {
            **self._headers,
            "Content-Type": content_type,
            "x-upsert": "false",
            "cache-control": "max-age=3600",
        }
        try:
            url = self._url("", path)
            response = await self._client.post(url, content=_nonempty(chunks), headers=headers)
        except httpx.HTTPError as exc:
            raise self._transport_failure("upload", path, exc) from exc
        if response.is_success:
            return
        if _meant_status(response)[0] == 409:
            raise StorageError(f"an object already exists at {path}")
        raise self._failure("upload", path, response)

    async def put_file(self, path: str, source: Path, *, content_type: str) -> None:
        await self.put(path, file_chunks(source), content_type=content_type)

    async def open(self, path: str) -> AsyncIterator[bytes]:
        url = self._url("authenticated/", path)
        try:
            async with self._client.stream("GET", url, headers=self._headers) as response:
                if not response.is_success:
                    await response.aread()
                    raise self._failure("download", path, response, absent_is_not_found=True)
                async for chunk in response.aiter_bytes():
                    yield chunk
        except httpx.HTTPError as exc:
            raise self._transport_failure("download", path, exc) from exc

    async def read(self, path: str) -> bytes:
        return b"".join([chunk async for chunk in self.open(path)])

    async def sign(self, paths: Sequence[str], expires_in: int) -> list[SignedUrl]:
        unique = list(dict.fromkeys(paths))
        if not unique:
            return []
        # Taken before asking, so it is never later than the ``exp`` Supabase puts in the token.
        expires_at = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=expires_in)
        if len(unique) == 1:
            signed = {unique[0]: await self._sign_one(unique[0], expires_in)}
        else:
            signed = await self._sign_many(unique, expires_in)
        return [SignedUrl(path=path, url=signed[path], expires_at=expires_at) for path in paths]

    async def delete(self, path: str) -> None:
        url = f"{self._api}/object/{quote(self.bucket, safe='')}"
        try:
            response = await self._client.request(
                "DELETE", url, json={"prefixes": [path]}, headers=self._headers
            )
        except httpx.HTTPError as exc:
            raise self._transport_failure("delete", path, exc) from exc
        if not response.is_success:  # an absent object is a 200 with an empty list
            raise self._failure("delete", path, response)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    # -- signing -------------------------------------------------------------------------------------

    async def _sign_one(self, path: str, expires_in: int) -> str:
        body = await self._post_json(
            "sign", path, self._url("sign/", path), {"expiresIn": expires_in}, absent_is_not_found=True
        )
        signed = body.get("signedURL") if isinstance(body, dict) else None
        if not isinstance(signed, str):
            raise StorageError(f"supabase sign of {path}: no signedURL in the answer")
        return self._signed_url(path, signed)

    async def _sign_many(self, paths: list[str], expires_in: int) -> dict[str, str]:
        """One batch call for all ``paths``; any path Supabase could not sign is :class:`ObjectNotFound`."""
        url = f"{self._api}/object/sign/{quote(self.bucket, safe='')}"
        what = f"{len(paths)} paths"
        body = await self._post_json(
            "sign", what, url, {"expiresIn": expires_in, "paths": paths}, absent_is_not_found=False
        )
        if not isinstance(body, list):
            raise StorageError(f"supabase sign of {what}: expected a list in the answer")
        entries = {e["path"]: e for e in body if isinstance(e, dict) and isinstance(e.get("path"), str)}
        signed: dict[str, str] = {}
        for path in paths:
            entry = entries.get(path)
            if entry is None:
                raise StorageError(f"supabase sign of {what}: no entry for {path}")
            url_part = entry.get("signedURL")
            if entry.get("error") or not isinstance(url_part, str):
                raise ObjectNotFound(path)
            signed[path] = self._signed_url(path, url_part)
        return signed

    def _signed_url(self, path: str, signed: str) -> str:
        """The absolute URL for Supabase's ``/object/sign/{bucket}/{path}?token=…`` (relative to /storage/v1).

        storage-api returns the path NOT percent-encoded (supabase-js runs ``encodeURI`` over it, which
        breaks on ``?``/``#``/``%``), so the path part is rebuilt from the path we asked about, encoded,
        and Supabase's query string (the token) is kept as is.
        """
        _, question, query = signed.rpartition("?")
        if not question or "token=" not in query:
            raise StorageError(f"supabase sign of {path}: the signedURL has no token")
        return f"{self._url('sign/', path)}?{query}"

    # -- plumbing ------------------------------------------------------------------------------------

    def _url(self, route: str, path: str) -> str:
        """``{api}/object/{route}{bucket}/{path}`` with every segment percent-encoded."""
        return f"{self._api}/object/{route}{quote(self.bucket, safe='')}/{quote(path, safe='/')}"

    async def _post_json(
        self, operation: str, what: str, url: str, payload: dict[str, Any], *, absent_is_not_found: bool
    ) -> Any:
        try:
            response = await self._client.post(url, json=payload, headers=self._headers)
        except httpx.HTTPError as exc:
            raise self._transport_failure(operation, what, exc) from exc
        if not response.is_success:
            raise self._failure(operation, what, response, absent_is_not_found=absent_is_not_found)
        try:
            return response.json()
        except ValueError as exc:
            raise StorageError(f"supabase {operation} of {what}: the answer is not JSON") from exc

    def _failure(
        self, operation: str, what: str, response: httpx.Response, *, absent_is_not_found: bool = False
    ) -> StorageError:
        """The error for an unexpected answer; a missing object (not bucket) is ObjectNotFound if asked."""
        status, error = _meant_status(response)
        if absent_is_not_found and status == 404 and error != BUCKET_MISSING:
            return ObjectNotFound(what)
        message = f"supabase {operation} of {what} failed: HTTP {response.status_code}"
        if status != response.status_code:
            message += f", statusCode {status}"
        if error:
            message += f", {error}"
        return StorageError(self._scrub(message))

    def _transport_failure(self, operation: str, what: str, exc: httpx.HTTPError) -> StorageError:
        return StorageError(self._scrub(f"supabase {operation} of {what} failed: {type(exc).__name__}"))

    def _scrub(self, message: str) -> str:
        return message.replace(self._service_key, "[service key]") if self._service_key else message
