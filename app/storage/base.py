"""The storage protocol every backend implements, and what it returns."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class Storage(Protocol):
    """Where upload bytes live. Paths are bucket-relative (``agent-inputs/{user}/{thread}/uploads/…``)."""

    bucket: str

    async def put(self, path: str, chunks: AsyncIterable[bytes], *, content_type: str) -> None:
        """Store the streamed bytes at ``path``; refuse to overwrite an existing object."""
        ...

    def open(self, path: str) -> AsyncIterator[bytes]:
        """Stream the object's bytes; raises :class:`ObjectNotFound` when absent."""
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
