"""What only the S3 backend has: the AWS credential chain, and an endpoint that is down or refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from iris.app.storage.base import StorageError
from iris.app.storage.s3 import S3Storage
from tests.support.postgres import free_port
from tests.support.s3_server import ACCESS_KEY, REGION, SECRET_KEY


def s3(endpoint: str, bucket: str = "iris") -> S3Storage:
    return S3Storage(
        bucket,
        public_url="http://127.0.0.1:8000",
        secret="s" * 40,
        region=REGION,
        endpoint_url=endpoint,
        addressing_style="path",
        timeout=2,
    )


async def one_chunk() -> AsyncIterator[bytes]:
    yield b"x"


async def test_keys_from_the_environment_work_too(
    s3_endpoint: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    storage = s3(s3_endpoint, s3_bucket)
    try:
        await storage.put("derived/env.png", one_chunk(), content_type="image/png")
        assert await storage.read("derived/env.png") == b"x"
    finally:
        await storage.aclose()


async def test_no_credentials_anywhere_is_a_storage_error(
    s3_endpoint: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    storage = s3(s3_endpoint, s3_bucket)
    try:
        with pytest.raises(StorageError, match="NoCredentialsError"):
            await storage.put("derived/anon.png", one_chunk(), content_type="image/png")
    finally:
        await storage.aclose()


async def test_a_missing_bucket_is_a_storage_error_not_a_missing_object(
    s3_endpoint: str, s3_bucket: str
) -> None:
    storage = s3(s3_endpoint, "iris-no-such-bucket")
    try:
        with pytest.raises(StorageError, match="NoSuchBucket") as caught:
            await storage.read("derived/a.png")
        assert type(caught.value) is StorageError
    finally:
        await storage.aclose()


async def test_an_unreachable_endpoint_is_a_storage_error(s3_bucket: str) -> None:
    storage = s3(f"http://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(StorageError, match="EndpointConnectionError"):
            await storage.read("derived/a.png")
        with pytest.raises(StorageError, match="EndpointConnectionError"):
            await storage.put("derived/a.png", one_chunk(), content_type="image/png")
    finally:
        await storage.aclose()
