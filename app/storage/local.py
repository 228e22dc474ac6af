"""Local-disk storage under ``{data_dir}/storage/{bucket}/``, with Supabase-shaped signed URLs.

Iris serves these URLs itself (``GET /storage/v1/object/sign/{bucket}/{path}``), so a frontend written
against Supabase Storage works unchanged on the embedded default.
"""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from pathlib import Path

import anyio

from iris.app.storage.base import ObjectNotFound, SignedUrl, StorageError, file_chunks
from iris.app.storage.tokens import iris_signed_urls

CHUNK = 256 * 1024


def safe_relative(path: str) -> Path:
    """``path`` as a relative path that cannot leave its root; ``ValueError`` otherwise."""
    segments = path.split("/")
    if not path or any(s in {"", ".", ".."} or "\\" in s or "\x00" in s for s in segments):
        raise ValueError(f"unsafe storage path {path!r}")
    return Path(*segments)


def _fsync_and_link(source: Path, target: Path) -> None:
    with source.open("rb") as handle:
        os.fsync(handle.fileno())
    os.link(source, target)  # never replaces an existing object


class LocalStorage:
    """Files on disk; writes land atomically (temp file, then a hard link that never overwrites)."""

    def __init__(self, root: Path, bucket: str, *, public_url: str, secret: str) -> None:
        self.bucket = bucket
        self.root = (root / bucket).resolve()
        self._public_url = public_url.rstrip("/")
        self.secret = secret

    def file_for(self, path: str) -> Path:
        """The file behind ``path``, guaranteed to be inside this bucket's directory."""
        candidate = (self.root / safe_relative(path)).resolve()
        if not candidate.is_relative_to(self.root):
            raise ValueError(f"storage path {path!r} escapes the bucket")
        return candidate

    async def put(self, path: str, chunks: AsyncIterable[bytes], *, content_type: str) -> None:
        target = self.file_for(path)
        await anyio.Path(target.parent).mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
        try:
            async with await anyio.open_file(temp, "wb") as handle:
                async for chunk in chunks:
                    await handle.write(chunk)
                await handle.flush()
                await anyio.to_thread.run_sync(os.fsync, handle.wrapped.fileno())  # a 201 means it is on disk
            await anyio.to_thread.run_sync(os.link, temp, target)
        except FileExistsError as exc:
            raise StorageError(f"an object already exists at {path}") from exc
        except OSError as exc:
            raise StorageError(f"could not write {path}: {exc.strerror}") from exc
        finally:
            await anyio.Path(temp).unlink(missing_ok=True)

    async def put_file(self, path: str, source: Path, *, content_type: str) -> None:
        """Adopt the file itself when it is on the same disk: fsync it and hard-link it into place (no
        copy); across filesystems, stream it like :meth:`put`."""
        target = self.file_for(path)
        await anyio.Path(target.parent).mkdir(parents=True, exist_ok=True)
        try:
            await anyio.to_thread.run_sync(_fsync_and_link, source, target)
        except FileExistsError as exc:
            raise StorageError(f"an object already exists at {path}") from exc
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise StorageError(f"could not write {path}: {exc.strerror}") from exc
            await self.put(path, file_chunks(source), content_type=content_type)

    async def open(self, path: str) -> AsyncIterator[bytes]:
        try:
            handle = await anyio.open_file(self.file_for(path), "rb")
        except FileNotFoundError as exc:
            raise ObjectNotFound(path) from exc
        async with handle:
            while chunk := await handle.read(CHUNK):
                yield chunk

    async def read(self, path: str) -> bytes:
        # One trip to a worker thread; streaming a file costs one per open, read and close.
        try:
            return await anyio.to_thread.run_sync(self.file_for(path).read_bytes)
        except FileNotFoundError as exc:
            raise ObjectNotFound(path) from exc

    async def sign(self, paths: Sequence[str], expires_in: int) -> list[SignedUrl]:
        return iris_signed_urls(self._public_url, self.secret, self.bucket, paths, expires_in)

    async def delete(self, path: str) -> None:
        await anyio.Path(self.file_for(path)).unlink(missing_ok=True)

    async def aclose(self) -> None:
        return None
