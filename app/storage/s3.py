"""S3-compatible object storage (AWS S3, Cloudflare R2, MinIO, GCS's S3 interface) through aiobotocore.

Objects stay private: the bucket needs no public access and no CORS. Clients get Iris's own signed URLs
(``/storage/v1/object/sign/{bucket}/{path}?token=…``, as on local disk), and Iris streams the object from
S3 when one is fetched. Credentials come from the standard AWS chain (environment, shared credentials and
config files with ``AWS_PROFILE``, web identity, container and instance roles); Iris holds none itself.

An upload is one ``PutObject`` with ``If-None-Match: *`` (never overwrites); it has returned, so S3 has
the object durably, before the caller answers ``201``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import aiohttp
import anyio
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.exceptions import BotoCoreError, ClientError

from iris.app.storage.base import ObjectNotFound, SignedUrl, StorageError
from iris.app.storage.tokens import iris_signed_urls

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client

CHUNK = 256 * 1024
SPOOL_BYTES = 8 * 1024 * 1024
"""A streamed ``put`` is held in memory up to this size, on a temporary file past it: S3 needs the length."""
_ABSENT = frozenset({"NoSuchKey", "404", "NotFound"})
_EXISTS = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict"})
_TRANSPORT = (BotoCoreError, aiohttp.ClientError, TimeoutError, OSError)


class S3Storage:
    """One bucket of an S3-compatible store. The client is made on first use (the credential chain is
    resolved then, not at start) and closed by :meth:`aclose`."""

    def __init__(
        self,
        bucket: str,
        *,
        public_url: str,
        secret: str,
        region: str | None = None,
        endpoint_url: str | None = None,
        addressing_style: str = "auto",
        timeout: float = 30.0,
    ) -> None:
        self.bucket = bucket
        self.secret = secret
        self._public_url = public_url.rstrip("/")
        self._region = region
        self._endpoint_url = endpoint_url
        self._config = AioConfig(
            s3={"addressing_style": addressing_style},
            connect_timeout=min(timeout, 10.0),
            read_timeout=timeout,
            retries={"max_attempts": 2, "mode": "standard"},
            # Only when an operation requires one: R2, MinIO and GCS refuse or ignore the CRC32 trailers
            # botocore otherwise adds to every upload.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        self._stack = contextlib.AsyncExitStack()
        self._client: S3Client | None = None
        self._lock = anyio.Lock()

    def __repr__(self) -> str:
        return f"S3Storage(bucket={self.bucket!r}, endpoint={self._endpoint_url or 'aws'!r})"

    async def _s3(self) -> S3Client:
        if self._client is None:
            async with self._lock:
                if self._client is None:
                    try:
                        self._client = await self._stack.enter_async_context(
                            get_session().create_client(
                                "s3",
                                region_name=self._region,
                                endpoint_url=self._endpoint_url,
                                config=self._config,
                            )
                        )
                    except _TRANSPORT as exc:
                        raise StorageError(f"s3 client for {self.bucket}: {type(exc).__name__}") from exc
        return self._client

    # -- operations ----------------------------------------------------------------------------------

    async def put(self, path: str, chunks: AsyncIterable[bytes], *, content_type: str) -> None:
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            async for chunk in chunks:
                spool.write(chunk)
            size = spool.tell()
            spool.seek(0)
            await self._put_object(path, spool, size, content_type)

    async def put_file(self, path: str, source: Path, *, content_type: str) -> None:
        try:
            handle = source.open("rb")
        except OSError as exc:
            raise StorageError(f"s3 upload of {path}: cannot read {source.name}: {exc.strerror}") from exc
        with handle:
            await self._put_object(path, handle, os.fstat(handle.fileno()).st_size, content_type)

    async def open(self, path: str) -> AsyncIterator[bytes]:
        client = await self._s3()
        try:
            response = await client.get_object(Bucket=self.bucket, Key=path)
        except ClientError as exc:
            raise self._failure("download", path, exc, absent_is_not_found=True) from exc
        except _TRANSPORT as exc:
            raise self._transport_failure("download", path, exc) from exc
        try:
            async with response["Body"] as body:
                async for chunk in body.iter_chunks(CHUNK):
                    yield chunk
        except _TRANSPORT as exc:
            raise self._transport_failure("download", path, exc) from exc

    async def read(self, path: str) -> bytes:
        return b"".join([chunk async for chunk in self.open(path)])

    async def sign(self, paths: Sequence[str], expires_in: int) -> list[SignedUrl]:
        """Iris's own URLs: no round trip to S3, and a URL never names the bucket's host."""
        return iris_signed_urls(self._public_url, self.secret, self.bucket, paths, expires_in)

    async def delete(self, path: str) -> None:
        client = await self._s3()
        try:
            await client.delete_object(Bucket=self.bucket, Key=path)  # absent: 204 as well
        except ClientError as exc:
            raise self._failure("delete", path, exc) from exc
        except _TRANSPORT as exc:
            raise self._transport_failure("delete", path, exc) from exc

    async def aclose(self) -> None:
        await self._stack.aclose()
        self._client = None

    # -- plumbing ------------------------------------------------------------------------------------

    async def _put_object(self, path: str, body: IO[bytes], size: int, content_type: str) -> None:
        client = await self._s3()
        try:
            await client.put_object(
                Bucket=self.bucket,
                Key=path,
                Body=body,
                ContentLength=size,
                ContentType=content_type,
                IfNoneMatch="*",
            )
        except ClientError as exc:
            if _code(exc) in _EXISTS:
                raise StorageError(f"an object already exists at {path}") from exc
            raise self._failure("upload", path, exc) from exc
        except _TRANSPORT as exc:
            raise self._transport_failure("upload", path, exc) from exc

    def _failure(
        self, operation: str, path: str, exc: ClientError, *, absent_is_not_found: bool = False
    ) -> StorageError:
        code = _code(exc)
        if absent_is_not_found and code in _ABSENT:
            return ObjectNotFound(path)
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return StorageError(f"s3 {operation} of {path} failed: HTTP {status}, {code[:80]}")

    def _transport_failure(self, operation: str, path: str, exc: BaseException) -> StorageError:
        return StorageError(f"s3 {operation} of {path} failed: {type(exc).__name__}")


def _code(exc: ClientError) -> str:
    error: dict[str, Any] = dict(exc.response.get("Error", {}))
    return str(error.get("Code", ""))
