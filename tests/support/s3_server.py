"""A real S3-speaking server on loopback: moto's S3 in server mode (``ThreadedMotoServer``), for
``IRIS_STORAGE=s3``. It speaks the S3 REST protocol (XML errors, ``If-None-Match`` on ``PutObject``,
SigV4-signed requests) over HTTP on 127.0.0.1. One server serves a session; each test empties it and
makes its bucket afresh."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import botocore.session
import httpx
import pytest
from moto.server import ThreadedMotoServer

ACCESS_KEY = "AKIAIRISTESTS0000000"
SECRET_KEY = "iris-tests-secret-access-key-0123456789"
REGION = "eu-central-1"


@contextmanager
def moto_s3() -> Iterator[str]:
    """A moto server on a free loopback port for the duration; yields its endpoint URL."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one access-log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def credentials_file(directory: Path) -> Path:
    """A shared credentials file (``~/.aws/credentials``'s format) with a ``default`` profile."""
    path = directory / "aws-credentials"
    path.write_text(f"[default]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    return path


def use_credentials_file(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """The AWS chain finds the test's credentials in a shared credentials file, and nothing from the
    machine (no keys in the environment, no ``~/.aws``, no instance metadata)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials_file(directory)))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(directory / "aws-config-absent"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@contextmanager
def _client(endpoint_url: str) -> Iterator[Any]:
    client = botocore.session.get_session().create_client(
        "s3",
        region_name=REGION,
        endpoint_url=endpoint_url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )
    try:
        yield client
    finally:
        client.close()


def fresh_bucket(endpoint_url: str, name: str = "iris") -> str:
    """The server emptied (moto's ``/moto-api/reset``), then one empty bucket ``name`` on it."""
    httpx.post(f"{endpoint_url}/moto-api/reset", timeout=10).raise_for_status()
    with _client(endpoint_url) as client:
        client.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
    return name


def object_keys(endpoint_url: str, bucket: str = "iris") -> list[str]:
    """Every key in ``bucket``, as S3 lists them (the first thousand)."""
    with _client(endpoint_url) as client:
        listed = client.list_objects_v2(Bucket=bucket)
    return [item["Key"] for item in listed.get("Contents", [])]
