"""One contract, three backends: every test here runs against local disk, Supabase Storage (the fake on
loopback) and S3 (moto's S3 server on loopback). What a backend may do differently (where its signed
URLs point) is asked of the backend, never skipped."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from iris.app.storage.base import ObjectNotFound, ServedByIris, Storage, StorageError
from iris.app.storage.local import LocalStorage
from iris.app.storage.s3 import S3Storage
from iris.app.storage.supabase import SupabaseStorage
from iris.app.storage.tokens import TokenRejected, verify_object_token
from tests.support.fake_supabase import FakeSupabase
from tests.support.http_server import serve_asgi
from tests.support.s3_server import REGION

BACKENDS = ["local", "supabase", "s3"]
SECRET = "conformance-url-secret-0123456789abcdef"
SERVICE_KEY = "service-role-key-for-conformance-0123456789"
SUPABASE_SECRET = "supabase-url-secret-for-conformance-0123456789"
BUCKET = "iris"


class Backend:
    """A storage under test and what checking its signed URLs needs."""

    def __init__(self, storage: Storage, token_secret: str, supabase: FakeSupabase | None = None) -> None:
        self.storage = storage
        self.token_secret = token_secret
        self.supabase = supabase


@pytest.fixture
def supabase_url() -> Iterator[tuple[FakeSupabase, str]]:
    fake = FakeSupabase(SERVICE_KEY, SUPABASE_SECRET, [BUCKET])
    with serve_asgi(fake.app) as url:
        yield fake, url


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    kind: str = request.param
    if kind == "local":
        made = Backend(
            LocalStorage(tmp_path / "storage", BUCKET, public_url="http://127.0.0.1:8000", secret=SECRET),
            SECRET,
        )
    elif kind == "supabase":
        fake, url = request.getfixturevalue("supabase_url")
        made = Backend(SupabaseStorage(url, SERVICE_KEY, BUCKET), SUPABASE_SECRET, fake)
    else:
        bucket = request.getfixturevalue("s3_bucket")
        made = Backend(
            S3Storage(
                bucket,
                public_url="http://127.0.0.1:8000",
                secret=SECRET,
                region=REGION,
                endpoint_url=request.getfixturevalue("s3_endpoint"),
                addressing_style="path",
            ),
            SECRET,
        )
    yield made
    await made.storage.aclose()


async def pieces(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def payload(size: int, seed: int = 3) -> bytes:
    return random.Random(seed).randbytes(size)


def token_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["token"][0]


# -- put / open / read ---------------------------------------------------------------------------------


async def test_put_then_open_streams_the_same_bytes_in_chunks(backend: Backend) -> None:
    data = payload(1024 * 1024 + 17)
    await backend.storage.put("agent-inputs/u/t/uploads/a.png", pieces(data), content_type="image/png")
    chunks = [chunk async for chunk in backend.storage.open("agent-inputs/u/t/uploads/a.png")]
    assert b"".join(chunks) == data
    assert len(chunks) > 1, "a large object is streamed, not handed over whole"
    assert await backend.storage.read("agent-inputs/u/t/uploads/a.png") == data


async def test_put_file_stores_the_files_bytes(backend: Backend, tmp_path: Path) -> None:
    source = tmp_path / "spooled.upload"
    source.write_bytes(data := payload(300_000, seed=5))
    await backend.storage.put_file("agent-inputs/u/t/uploads/f.jpg", source, content_type="image/jpeg")
    assert await backend.storage.read("agent-inputs/u/t/uploads/f.jpg") == data


async def test_an_empty_object_round_trips(backend: Backend) -> None:
    await backend.storage.put("derived/empty.bin", pieces(b""), content_type="application/octet-stream")
    assert await backend.storage.read("derived/empty.bin") == b""


async def test_put_never_overwrites(backend: Backend) -> None:
    await backend.storage.put("derived/once.png", pieces(b"first"), content_type="image/png")
    with pytest.raises(StorageError, match="already exists"):
        await backend.storage.put("derived/once.png", pieces(b"second"), content_type="image/png")
    assert await backend.storage.read("derived/once.png") == b"first"


async def test_a_failing_source_propagates_and_stores_nothing(backend: Backend) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"partial"
        raise RuntimeError("the client went away")

    with pytest.raises(RuntimeError, match="went away"):
        await backend.storage.put("derived/broken.png", broken(), content_type="image/png")
    with pytest.raises(ObjectNotFound):
        await backend.storage.read("derived/broken.png")


async def test_a_missing_object_is_object_not_found(backend: Backend) -> None:
    with pytest.raises(ObjectNotFound):
        await backend.storage.read("agent-inputs/u/t/uploads/absent.png")
    with pytest.raises(ObjectNotFound):
        async for _ in backend.storage.open("agent-inputs/u/t/uploads/absent.png"):
            pass


async def test_delete_removes_and_a_second_delete_is_fine(backend: Backend) -> None:
    await backend.storage.put("derived/gone.png", pieces(b"x"), content_type="image/png")
    await backend.storage.delete("derived/gone.png")
    with pytest.raises(ObjectNotFound):
        await backend.storage.read("derived/gone.png")
    await backend.storage.delete("derived/gone.png")


async def test_concurrent_puts_and_reads(backend: Backend) -> None:
    paths = [f"derived/many/{i}.png" for i in range(12)]
    await asyncio.gather(
        *(backend.storage.put(p, pieces(p.encode()), content_type="image/png") for p in paths)
    )
    assert await asyncio.gather(*(backend.storage.read(p) for p in paths)) == [p.encode() for p in paths]


# -- signed URLs ---------------------------------------------------------------------------------------


async def test_signed_urls_come_in_order_and_verify_for_their_own_path_only(backend: Backend) -> None:
    paths = ["agent-inputs/u/t/uploads/1.png", "agent-inputs/u/t/uploads/2 two?.png"]
    for path in paths:
        await backend.storage.put(path, pieces(b"img"), content_type="image/png")
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    signed = await backend.storage.sign([*paths, paths[0]], 600)
    assert [s.path for s in signed] == [*paths, paths[0]]
    for item in signed:
        assert before + dt.timedelta(seconds=599) <= item.expires_at <= before + dt.timedelta(seconds=601)
        parts = urlsplit(item.url)
        assert parts.path.startswith(f"/storage/v1/object/sign/{BUCKET}/")
        assert "%3F" in parts.path or item.path == paths[0], "the path is percent-encoded"
        verify_object_token(backend.token_secret, token_of(item.url), BUCKET, item.path)
        with pytest.raises(TokenRejected, match="path_mismatch"):
            verify_object_token(backend.token_secret, token_of(item.url), BUCKET, "agent-inputs/u/t/x.png")
        with pytest.raises(TokenRejected, match="invalid"):
            verify_object_token(
                "another-secret-0123456789abcdef-0123456789", token_of(item.url), BUCKET, item.path
            )


async def test_signed_urls_point_at_iris_unless_the_store_serves_them(backend: Backend) -> None:
    """Local and S3 objects are private and served by Iris (the URL never names the store); Supabase
    serves its own signed URLs."""
    await backend.storage.put("agent-inputs/u/t/uploads/p.png", pieces(b"img"), content_type="image/png")
    (signed,) = await backend.storage.sign(["agent-inputs/u/t/uploads/p.png"], 60)
    if isinstance(backend.storage, ServedByIris):
        assert signed.url.startswith("http://127.0.0.1:8000/storage/v1/object/sign/")
        assert backend.storage.secret == backend.token_secret
    else:
        assert backend.supabase is not None
        async with httpx.AsyncClient() as http:
            fetched = await http.get(signed.url)
        assert (fetched.status_code, fetched.content) == (200, b"img")
