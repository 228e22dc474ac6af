"""The storage protocol every backend implements, and what it returns."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import anyio
import msgspec


class SignedUrl(msgspec.Struct, frozen=True, kw_only=True):
    """A short-lived URL for one object."""

    path: str
    url: str
    expires_at: dt.datetime


class StorageError(Exception):
    """The backend failed (I/O, network, unexpected answer). Never shown to clients verbatim."""


class ObjectNotFound(StorageError):
    """No object at that path."""


async def file_chunks(source: Path, chunk_size: int = 256 * 1024) -> AsyncIterator[bytes]:
    """A local file, streamed."""
    async with await anyio.open_file(source, "rb") as handle:
        while chunk := await handle.read(chunk_size):
            yield chunk


@runtime_checkable
class Storage(Protocol):
    """Where upload bytes live. Paths are bucket-relative (``agent-inputs/{user}/{thread}/uploads/…``)."""

    bucket: str

    async def put(self, path: str, chunks: AsyncIterable[bytes], *, content_type: str) -> None:
        """Store the streamed bytes at ``path``; refuse to overwrite an existing object."""
        ...

    async def put_file(self, path: str, source: Path, *, content_type: str) -> None:
        """Store a local file's bytes at ``path`` (backends on the same disk may adopt the file)."""
        ...

    def open(self, path: str) -> AsyncIterator[bytes]:
        """Stream the object's bytes; raises :class:`ObjectNotFound` when absent."""
        ...

    async def read(self, path: str) -> bytes:
        """A whole small object (an image within the upload limit) at once; :class:`ObjectNotFound`
        when absent."""
        ...

    async def sign(self, paths: Sequence[str], expires_in: int) -> list[SignedUrl]:
        """Signed URLs for many paths at once, in order (one round trip where the backend allows)."""
        ...

    async def delete(self, path: str) -> None:
        """Remove the object; absent objects are not an error."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


@runtime_checkable
class ServedByIris(Protocol):
    """A backend whose signed URLs point at Iris itself (local disk, S3): Iris verifies the token with
    ``secret`` and streams the object; the store's own URLs are never handed out."""

    bucket: str
    secret: str

    def open(self, path: str) -> AsyncIterator[bytes]:
        """As :meth:`Storage.open`."""
        ...
