"""SupabaseStorage against a fake Supabase Storage served over real HTTP on 127.0.0.1 (no mocked httpx)."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from iris.app.storage.base import ObjectNotFound, StorageError
from iris.app.storage.supabase import SupabaseStorage
from iris.app.storage.tokens import TokenRejected, sign_object_token, verify_object_token
from tests.support.fake_supabase import FakeSupabase, StoredObject
from tests.support.http_server import serve_asgi
from tests.support.postgres import free_port
from tests.support.waits import REQUEST_SECONDS, eventually

SERVICE_KEY = "service-role-key-for-iris-tests-0123456789"
JWT_SECRET = "fake-supabase-url-signing-secret-0123456789"
BUCKET = "agent-inputs"
STYLES = ["supabase", "http"]  # 4xx as HTTP 400 + body statusCode (storage-api), or as the real status

Attempt = Callable[[], Awaitable[Any]]


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> FakeSupabase:
    return FakeSupabase(SERVICE_KEY, JWT_SECRET, [BUCKET], status_style=getattr(request, "param", "supabase"))


@pytest.fixture
def base_url(fake: FakeSupabase) -> Iterator[str]:
    with serve_asgi(fake.app) as url:
        yield url


@pytest.fixture
async def storage(base_url: str) -> AsyncIterator[SupabaseStorage]:
    backend = SupabaseStorage(base_url, SERVICE_KEY, BUCKET)
    yield backend
    await backend.aclose()


class Chunks:
    """An async iterable of ``data`` in ``size``-byte pieces that counts what it handed out."""

    def __init__(self, data: bytes, size: int = 64 * 1024) -> None:
        self.data = data
        self.size = size
        self.yielded = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.data), self.size):
            self.yielded += 1
            yield self.data[start : start + self.size]


def payload(size: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(size)


async def put_bytes(
    storage: SupabaseStorage, path: str, data: bytes, content_type: str = "text/plain"
) -> None:
    await storage.put(path, Chunks(data), content_type=content_type)


# -- put / open ----------------------------------------------------------------------------------------


async def test_put_streams_the_upload_and_open_round_trips_it(
    storage: SupabaseStorage, fake: FakeSupabase
) -> None:
    data = payload(5 * 1024 * 1024 + 123)
    chunks = Chunks(data)
    path = "user-1/thread-1/uploads/photo.png"

    await storage.put(path, chunks, content_type="image/png")

    assert chunks.yielded == 81
    assert fake.objects[(BUCKET, path)] == StoredObject(data, "image/png")
    [upload] = fake.requests_to("POST", f"/storage/v1/object/{BUCKET}/{path}")
    assert upload.body_size == len(data)
    assert upload.body_chunks > 1
    # Streamed: chunked transfer encoding, so the body was never joined into one bytes object.
    assert upload.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in upload.headers
    assert upload.headers["authorization"] == f"Bearer {SERVICE_KEY}"
    assert upload.headers["apikey"] == SERVICE_KEY
    assert upload.headers["content-type"] == "image/png"
    assert upload.headers["x-upsert"] == "false"
    assert upload.headers["cache-control"] == "max-age=3600"

    pieces = [chunk async for chunk in storage.open(path)]
    assert b"".join(pieces) == data
    assert len(pieces) > 1
    [download] = fake.requests_to("GET", f"/storage/v1/object/authenticated/{BUCKET}/{path}")
    assert download.headers["authorization"] == f"Bearer {SERVICE_KEY}"
    assert download.headers["apikey"] == SERVICE_KEY


async def test_put_of_an_empty_object(storage: SupabaseStorage, fake: FakeSupabase) -> None:
    await put_bytes(storage, "empty.txt", b"")

    assert fake.objects[(BUCKET, "empty.txt")] == StoredObject(b"", "text/plain")
    assert await storage.read("empty.txt") == b""


@pytest.mark.parametrize("fake", STYLES, indirect=True)
async def test_put_refuses_to_overwrite(storage: SupabaseStorage, fake: FakeSupabase) -> None:
    await put_bytes(storage, "a/first.txt", b"first")

    with pytest.raises(StorageError, match="already exists") as caught:
        await put_bytes(storage, "a/first.txt", b"second", content_type="image/png")

    assert not isinstance(caught.value, ObjectNotFound)
    assert fake.objects[(BUCKET, "a/first.txt")] == StoredObject(b"first", "text/plain")
    assert len(fake.requests_to("POST", f"/storage/v1/object/{BUCKET}/a/first.txt")) == 2


async def test_an_error_from_the_callers_chunks_propagates_and_stores_nothing(
    storage: SupabaseStorage, fake: FakeSupabase
) -> None:
    async def failing() -> AsyncIterator[bytes]:
        yield b"x" * 100_000
        yield b"y" * 100_000
        raise ValueError("upload too large")

    with pytest.raises(ValueError, match="upload too large"):
        await storage.put("big.bin", failing(), content_type="application/octet-stream")

    async def cut_off() -> bool:  # the fake sees the disconnect a moment later
        return any(not r.complete for r in fake.requests)

    await eventually(cut_off, within=REQUEST_SECONDS, what="the fake seeing the upload cut off")
    [attempt] = fake.requests
    assert attempt.complete is False
    assert (BUCKET, "big.bin") not in fake.objects


@pytest.mark.parametrize("fake", STYLES, indirect=True)
async def test_open_of_a_missing_object_is_object_not_found(
    storage: SupabaseStorage, fake: FakeSupabase
) -> None:
    with pytest.raises(ObjectNotFound):
        await storage.read("nobody/here.png")
    assert len(fake.requests_to("GET", f"/storage/v1/object/authenticated/{BUCKET}/nobody/here.png")) == 1


@pytest.mark.parametrize("fake", STYLES, indirect=True)
async def test_a_missing_bucket_is_a_storage_error_not_a_missing_object(
    base_url: str, fake: FakeSupabase
) -> None:
    backend = SupabaseStorage(base_url, SERVICE_KEY, "no-such-bucket")
    attempts: list[Attempt] = [
        lambda: backend.read("x.txt"),
        lambda: backend.sign(["x.txt"], 60),
        lambda: backend.sign(["x.txt", "y.txt"], 60),
        lambda: backend.delete("x.txt"),
    ]
    try:
        for attempt in attempts:
            with pytest.raises(StorageError, match="404") as caught:
                await attempt()
            assert not isinstance(caught.value, ObjectNotFound)
    finally:
        await backend.aclose()


async def test_paths_are_percent_encoded(storage: SupabaseStorage, fake: FakeSupabase, base_url: str) -> None:
    path = "user 1/my photo #1?.png"
    await put_bytes(storage, path, b"odd name", content_type="image/png")

    assert fake.requests[-1].raw_path == f"/storage/v1/object/{BUCKET}/user%201/my%20photo%20%231%3F.png"
    assert fake.objects[(BUCKET, path)] == StoredObject(b"odd name", "image/png")
    assert await storage.read(path) == b"odd name"

    [signed] = await storage.sign([path], 60)
    assert signed.url.startswith(
        f"{base_url}/storage/v1/object/sign/{BUCKET}/user%201/my%20photo%20%231%3F.png?"
    )
    async with httpx.AsyncClient() as client:
        response = await client.get(signed.url)
    assert response.status_code == 200
    assert response.content == b"odd name"


async def test_concurrent_puts_share_the_client(storage: SupabaseStorage, fake: FakeSupabase) -> None:
    items = {f"many/{i}.bin": payload(200_000 + i, seed=i) for i in range(8)}

    await asyncio.gather(*(put_bytes(storage, path, data) for path, data in items.items()))

    assert {path: fake.objects[(BUCKET, path)].data for path in items} == items


# -- sign ----------------------------------------------------------------------------------------------


async def test_sign_one_path_uses_the_single_endpoint_and_the_url_downloads(
    storage: SupabaseStorage, fake: FakeSupabase, base_url: str
) -> None:
    data = payload(300_000)
    path = "user-1/thread-1/uploads/cat.webp"
    await put_bytes(storage, path, data, content_type="image/webp")
    fake.requests.clear()

    before = dt.datetime.now(dt.UTC)
    [signed] = await storage.sign([path], 600)

    [request] = fake.requests
    assert (request.method, request.path) == ("POST", f"/storage/v1/object/sign/{BUCKET}/{path}")
    assert request.json == {"expiresIn": 600}
    assert request.headers["authorization"] == f"Bearer {SERVICE_KEY}"
    assert request.headers["apikey"] == SERVICE_KEY
    assert signed.path == path
    assert signed.url.startswith(f"{base_url}/storage/v1/object/sign/{BUCKET}/{path}?token=")
    assert before - dt.timedelta(seconds=1) <= signed.expires_at - dt.timedelta(seconds=600) <= before

    async with httpx.AsyncClient() as client:  # no headers: the token is the credential
        response = await client.get(signed.url)
    assert response.status_code == 200
    assert response.content == data
    assert response.headers["content-type"] == "image/webp"


async def test_the_signed_token_verifies_and_expires(storage: SupabaseStorage) -> None:
    await put_bytes(storage, "t/token.txt", b"token")

    before = dt.datetime.now(dt.UTC)
    [signed] = await storage.sign(["t/token.txt"], 120)

    token = parse_qs(urlsplit(signed.url).query)["token"][0]
    verify_object_token(JWT_SECRET, token, BUCKET, "t/token.txt")
    with pytest.raises(TokenRejected) as mismatch:
        verify_object_token(JWT_SECRET, token, BUCKET, "t/other.txt")
    assert mismatch.value.reason == "path_mismatch"
    claims = jwt.decode(token, JWT_SECRET, algorithms=["HS256"])
    assert claims["url"] == f"{BUCKET}/t/token.txt"
    assert 0 <= claims["exp"] - signed.expires_at.timestamp() <= 2  # ours is never later than Supabase's
    assert before < signed.expires_at <= before + dt.timedelta(seconds=120)


async def test_sign_of_many_paths_is_one_request_in_order(
    storage: SupabaseStorage, fake: FakeSupabase
) -> None:
    paths = [f"batch/{name}.txt" for name in ("e", "b", "d", "a", "c")]
    for path in paths:
        await put_bytes(storage, path, path.encode())
    fake.requests.clear()

    signed = await storage.sign(paths, 90)

    [request] = fake.requests
    assert (request.method, request.path) == ("POST", f"/storage/v1/object/sign/{BUCKET}")
    assert request.json == {"expiresIn": 90, "paths": paths}
    assert [s.path for s in signed] == paths
    async with httpx.AsyncClient() as client:
        bodies = [(await client.get(s.url)).content for s in signed]
    assert bodies == [path.encode() for path in paths]
    assert len({s.expires_at for s in signed}) == 1


async def test_sign_repeats_a_duplicate_path_without_asking_twice(
    storage: SupabaseStorage, fake: FakeSupabase
) -> None:
    await put_bytes(storage, "dup/a.txt", b"a")
    await put_bytes(storage, "dup/b.txt", b"b")
    fake.requests.clear()

    signed = await storage.sign(["dup/a.txt", "dup/b.txt", "dup/a.txt"], 60)

    [request] = fake.requests
    assert request.json == {"expiresIn": 60, "paths": ["dup/a.txt", "dup/b.txt"]}
    assert [s.path for s in signed] == ["dup/a.txt", "dup/b.txt", "dup/a.txt"]
    assert signed[0].url == signed[2].url


async def test_sign_of_no_paths_asks_nothing(storage: SupabaseStorage, fake: FakeSupabase) -> None:
    assert await storage.sign([], 60) == []
    assert fake.requests == []


@pytest.mark.parametrize("fake", STYLES, indirect=True)
async def test_sign_of_a_missing_path_is_object_not_found(
    storage: SupabaseStorage, fake: FakeSupabase
) -> None:
    await put_bytes(storage, "here/1.txt", b"1")
    await put_bytes(storage, "here/2.txt", b"2")

    with pytest.raises(ObjectNotFound, match=re.escape("gone/3.txt")):
        await storage.sign(["here/1.txt", "gone/3.txt", "here/2.txt"], 60)
    with pytest.raises(ObjectNotFound, match=re.escape("gone/4.txt")):
        await storage.sign(["gone/4.txt"], 60)
    assert len(fake.requests_to("POST", f"/storage/v1/object/sign/{BUCKET}")) == 1


async def test_the_fakes_public_route_refuses_bad_and_expired_tokens(
    storage: SupabaseStorage, base_url: str
) -> None:
    await put_bytes(storage, "p/q.txt", b"q")
    [signed] = await storage.sign(["p/q.txt"], 60)
    route = f"{base_url}/storage/v1/object/sign/{BUCKET}/p/q.txt"
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)
    expired = sign_object_token(JWT_SECRET, BUCKET, "p/q.txt", past)
    future = past + dt.timedelta(hours=1)
    forged = sign_object_token("not-the-fakes-url-signing-secret-0123456789", BUCKET, "p/q.txt", future)
    other = sign_object_token(JWT_SECRET, BUCKET, "p/other.txt", future)

    async with httpx.AsyncClient() as client:
        assert (await client.get(signed.url)).content == b"q"
        tampered = await client.get(route, params={"token": forged})
        late = await client.get(route, params={"token": expired})
        elsewhere = await client.get(route, params={"token": other})
        missing = await client.get(route)

    for response in (tampered, late, elsewhere, missing):
        assert response.status_code == 400
        assert response.json()["error"] == "InvalidJWT"
    assert late.json()["message"] == "jwt expired"


# -- delete --------------------------------------------------------------------------------------------


async def test_delete_then_open_is_object_not_found(storage: SupabaseStorage, fake: FakeSupabase) -> None:
    await put_bytes(storage, "d/gone.txt", b"bye")

    await storage.delete("d/gone.txt")

    [request] = fake.requests_to("DELETE", f"/storage/v1/object/{BUCKET}")
    assert request.json == {"prefixes": ["d/gone.txt"]}
    assert (BUCKET, "d/gone.txt") not in fake.objects
    with pytest.raises(ObjectNotFound):
        await storage.read("d/gone.txt")


async def test_delete_of_a_missing_object_is_fine(storage: SupabaseStorage, fake: FakeSupabase) -> None:
    await put_bytes(storage, "keep.txt", b"keep")

    await storage.delete("never/was.txt")

    assert fake.requests[-1].method == "DELETE"
    assert fake.objects == {(BUCKET, "keep.txt"): StoredObject(b"keep", "text/plain")}


# -- failures ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fake", STYLES, indirect=True)
async def test_a_wrong_service_key_is_a_storage_error_that_does_not_leak_it(
    base_url: str, fake: FakeSupabase
) -> None:
    fake.objects[(BUCKET, "x.txt")] = StoredObject(b"x", "text/plain")
    wrong_key = "wrong-service-key-SECRET-do-not-log-42"
    backend = SupabaseStorage(base_url, wrong_key, BUCKET)
    try:
        attempts: list[Attempt] = [
            lambda: put_bytes(backend, "y.txt", b"y"),
            lambda: backend.read("x.txt"),
            lambda: backend.sign(["x.txt"], 60),
            lambda: backend.sign(["x.txt", "y.txt"], 60),
            lambda: backend.delete("x.txt"),
        ]
        for attempt in attempts:
            with pytest.raises(StorageError, match="403") as caught:
                await attempt()
            assert not isinstance(caught.value, ObjectNotFound)
            assert wrong_key not in str(caught.value)
            assert wrong_key not in repr(caught.value)
    finally:
        await backend.aclose()
    assert fake.objects == {(BUCKET, "x.txt"): StoredObject(b"x", "text/plain")}
    assert len(fake.requests) == 5
    assert wrong_key not in repr(backend)


async def test_a_server_error_is_a_storage_error(storage: SupabaseStorage, fake: FakeSupabase) -> None:
    await put_bytes(storage, "s/ok.txt", b"ok")
    fake.fail_next(5, status=500)

    attempts: list[Attempt] = [
        lambda: put_bytes(storage, "s/new.txt", b"new"),
        lambda: storage.read("s/ok.txt"),
        lambda: storage.sign(["s/ok.txt"], 60),
        lambda: storage.sign(["s/ok.txt", "s/new.txt"], 60),
        lambda: storage.delete("s/ok.txt"),
    ]
    for attempt in attempts:
        with pytest.raises(StorageError, match="HTTP 500") as caught:
            await attempt()
        assert not isinstance(caught.value, ObjectNotFound)
        assert SERVICE_KEY not in str(caught.value)

    assert await storage.read("s/ok.txt") == b"ok"  # the faults are used up
    assert (BUCKET, "s/new.txt") not in fake.objects


async def test_a_hanging_server_times_out_as_a_storage_error(base_url: str, fake: FakeSupabase) -> None:
    fake.objects[(BUCKET, "slow.txt")] = StoredObject(b"slow", "text/plain")
    backend = SupabaseStorage(base_url, SERVICE_KEY, BUCKET, timeout=0.3)
    fake.hang_next(2)
    try:
        with pytest.raises(StorageError, match="ReadTimeout"):
            await backend.read("slow.txt")
        with pytest.raises(StorageError, match="ReadTimeout"):
            await backend.sign(["slow.txt"], 60)
        assert await backend.read("slow.txt") == b"slow"
    finally:
        await backend.aclose()


async def test_an_unreachable_server_is_a_storage_error() -> None:
    backend = SupabaseStorage(f"http://127.0.0.1:{free_port()}", SERVICE_KEY, BUCKET)
    try:
        with pytest.raises(StorageError, match="ConnectError"):
            await put_bytes(backend, "x.txt", b"x")
        with pytest.raises(StorageError, match="ConnectError"):
            await backend.read("x.txt")
    finally:
        await backend.aclose()


# -- lifecycle -----------------------------------------------------------------------------------------


async def test_aclose_closes_its_own_client(base_url: str) -> None:
    backend = SupabaseStorage(base_url, SERVICE_KEY, BUCKET)
    own = backend._client
    assert not own.is_closed

    await backend.aclose()

    assert own.is_closed


async def test_aclose_leaves_an_injected_client_open(base_url: str, fake: FakeSupabase) -> None:
    async with httpx.AsyncClient() as client:
        backend = SupabaseStorage(base_url, SERVICE_KEY, BUCKET, client=client)
        await put_bytes(backend, "shared.txt", b"shared")

        await backend.aclose()

        assert not client.is_closed
        again = SupabaseStorage(base_url, SERVICE_KEY, BUCKET, client=client)
        assert await again.read("shared.txt") == b"shared"
    assert fake.objects[(BUCKET, "shared.txt")] == StoredObject(b"shared", "text/plain")
