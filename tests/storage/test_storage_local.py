"""The local storage backend on a real directory."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from iris.app.storage.base import ObjectNotFound, StorageError, file_chunks
from iris.app.storage.local import LocalStorage
from iris.app.storage.tokens import verify_object_token

SECRET = "s" * 40


async def _chunks(*pieces: bytes) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


@pytest.fixture
def storage(tmp_path: Path) -> LocalStorage:
    return LocalStorage(tmp_path / "storage", "iris", public_url="http://127.0.0.1:8000/", secret=SECRET)


async def test_put_open_delete_round_trip(storage: LocalStorage) -> None:
    await storage.put("a/b/c.png", _chunks(b"one", b"two"), content_type="image/png")
    assert b"".join([c async for c in storage.open("a/b/c.png")]) == b"onetwo"
    assert await storage.read("a/b/c.png") == b"onetwo"
    assert not list(storage.root.rglob("*.part"))  # the temp file is gone
    with pytest.raises(StorageError):
        await storage.put("a/b/c.png", _chunks(b"again"), content_type="image/png")
    await storage.delete("a/b/c.png")
    await storage.delete("a/b/c.png")  # absent: fine
    with pytest.raises(ObjectNotFound):
        [c async for c in storage.open("a/b/c.png")]
    with pytest.raises(ObjectNotFound):
        await storage.read("a/b/c.png")


async def test_put_file_adopts_the_file_without_copying(storage: LocalStorage, tmp_path: Path) -> None:
    source = tmp_path / "spooled.part"
    source.write_bytes(b"x" * 100_000)
    await storage.put_file("u/t/uploads/x.png", source, content_type="image/png")
    target = storage.file_for("u/t/uploads/x.png")
    assert target.stat().st_ino == source.stat().st_ino  # same file, linked into place
    source.unlink()
    assert target.read_bytes() == b"x" * 100_000
    source.write_bytes(b"other")
    with pytest.raises(StorageError):
        await storage.put_file("u/t/uploads/x.png", source, content_type="image/png")
    assert b"".join([c async for c in file_chunks(target, chunk_size=7)]) == b"x" * 100_000


@pytest.mark.parametrize("path", ["", "/abs", "a//b", "a/../b", "../x", "a/./b", "a\\b", "a/\x00"])
async def test_paths_cannot_escape(storage: LocalStorage, path: str) -> None:
    with pytest.raises(ValueError, match=r"unsafe|escapes"):
        storage.file_for(path)


async def test_signed_urls_have_supabase_shape(storage: LocalStorage) -> None:
    before = dt.datetime.now(dt.UTC)
    (signed,) = await storage.sign(["agent-inputs/u/t/uploads/x.png"], 600)
    url = urlsplit(signed.url)
    assert (url.scheme, url.netloc) == ("http", "127.0.0.1:8000")
    assert url.path == "/storage/v1/object/sign/iris/agent-inputs/u/t/uploads/x.png"
    token = url.query.removeprefix("token=")
    verify_object_token(SECRET, token, "iris", "agent-inputs/u/t/uploads/x.png")
    assert dt.timedelta(seconds=598) <= signed.expires_at - before <= dt.timedelta(seconds=601)
    assert await storage.sign([], 600) == []
