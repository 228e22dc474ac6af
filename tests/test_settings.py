"""Settings come from an explicit object or from IRIS_* variables, never at import time."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from iris.app.asgi import create_app
from iris.app.settings import Settings, SettingsError, load_settings, prepare
from tests.support.waits import SUBPROCESS_SECONDS


def test_defaults_need_no_configuration() -> None:
    settings = load_settings({})
    assert settings == Settings()
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert settings.storage == "local"
    assert settings.effective_database_url == f"sqlite+aiosqlite:///{Path('.iris/iris.db').resolve()}"


def test_reads_iris_variables_with_types() -> None:
    settings = load_settings(
        {
            "IRIS_PORT": "9001",
            "IRIS_DATA_DIR": "/tmp/x",
            "IRIS_DATABASE_URL": "postgresql+asyncpg://u@h/db",
            "IRIS_DEBUG": "true",
            "IRIS_MAX_IMAGE_BYTES": "1000",
            "PATH": "/bin",  # not ours: ignored
        }
    )
    assert settings.port == 9001
    assert settings.data_path == Path("/tmp/x")
    assert settings.effective_database_url == "postgresql+asyncpg://u@h/db"
    assert settings.debug is True
    assert settings.max_image_bytes == 1000


def test_unknown_iris_variable_is_an_error() -> None:
    with pytest.raises(SettingsError, match="IRIS_PROT"):
        load_settings({"IRIS_PROT": "1"})


def test_badly_typed_variable_is_an_error() -> None:
    with pytest.raises(SettingsError, match="port"):
        load_settings({"IRIS_PORT": "eighty"})
    with pytest.raises(SettingsError, match="storage"):
        load_settings({"IRIS_STORAGE": "gcs"})


def test_s3_settings_are_read() -> None:
    settings = load_settings(
        {
            "IRIS_STORAGE": "s3",
            "IRIS_STORAGE_BUCKET": "acme-iris",
            "IRIS_S3_REGION": "auto",
            "IRIS_S3_ENDPOINT_URL": "https://acct.r2.cloudflarestorage.com",
            "IRIS_S3_ADDRESSING_STYLE": "path",
            "IRIS_S3_TIMEOUT_SECONDS": "5",
        }
    )
    assert (settings.storage, settings.storage_bucket, settings.s3_region) == ("s3", "acme-iris", "auto")
    assert settings.s3_endpoint_url == "https://acct.r2.cloudflarestorage.com"
    assert (settings.s3_addressing_style, settings.s3_timeout_seconds) == ("path", 5.0)
    with pytest.raises(SettingsError, match="s3_addressing_style"):
        load_settings({"IRIS_S3_ADDRESSING_STYLE": "dns"})
    with pytest.raises(SettingsError, match="s3_timeout_seconds"):
        load_settings({"IRIS_S3_TIMEOUT_SECONDS": "0"})


def test_secret_is_generated_once_and_reused(tmp_path: Path) -> None:
    first = prepare(Settings(data_dir=str(tmp_path / "d")))
    second = prepare(Settings(data_dir=str(tmp_path / "d")))
    assert first.jwt_secret is not None
    assert len(first.jwt_secret) >= 32
    assert first.jwt_secret == second.jwt_secret
    assert (tmp_path / "d" / "jwt-secret").stat().st_mode & 0o777 == 0o600
    other = prepare(Settings(data_dir=str(tmp_path / "other")))
    assert other.jwt_secret != first.jwt_secret


def test_configured_secret_wins(tmp_path: Path) -> None:
    settings = prepare(Settings(data_dir=str(tmp_path), jwt_secret="configured"))
    assert settings.jwt_secret == "configured"
    assert not (tmp_path / "jwt-secret").exists()


def test_importing_the_app_reads_no_environment() -> None:
    env = {**os.environ, "IRIS_PORT": "not-a-port"}
    code = "import iris.app.asgi, iris.app.settings, iris.app.api.routes; print('imported')"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=SUBPROCESS_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    assert "imported" in done.stdout
    code = "import iris.app.asgi; iris.app.asgi.create_app()"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=SUBPROCESS_SECONDS,
    )
    assert done.returncode != 0
    assert "SettingsError" in done.stderr


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (Settings(public_url="http://iris.example.com"), "https"),
        (Settings(storage="supabase"), "IRIS_SUPABASE_URL"),
        (Settings(storage="supabase", supabase_url="https://p.supabase.co"), "IRIS_SUPABASE_SERVICE_KEY"),
        (Settings(storage="s3", public_url="http://iris.example.com"), "https"),
    ],
    ids=["http-public-url", "supabase-without-url", "supabase-without-key", "s3-http-public-url"],
)
def test_storage_misconfiguration_fails_at_start(settings: Settings, message: str, tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=message):
        create_app(msgspec.structs.replace(settings, data_dir=str(tmp_path)))


WILDCARD = "0.0.0.0"  # noqa: S104 (a setting under test; nothing binds it)


@pytest.mark.parametrize(
    ("environ", "public_url", "warns"),
    [
        ({}, "http://127.0.0.1:8000", False),
        ({"IRIS_PORT": "9001"}, "http://127.0.0.1:9001", False),
        ({"IRIS_HOST": "localhost", "IRIS_PORT": "9001"}, "http://localhost:9001", False),
        ({"IRIS_HOST": "::1", "IRIS_PORT": "9001"}, "http://[::1]:9001", False),
        ({"IRIS_HOST": WILDCARD, "IRIS_PORT": "9001"}, "http://127.0.0.1:9001", True),
        ({"IRIS_HOST": "::"}, "http://127.0.0.1:8000", True),
        (
            {"IRIS_HOST": WILDCARD, "IRIS_PUBLIC_URL": "https://iris.example.com"},
            "https://iris.example.com",
            False,
        ),
    ],
)
def test_public_url_follows_host_and_port(environ: dict[str, str], public_url: str, warns: bool) -> None:
    settings = load_settings(environ)
    assert settings.effective_public_url == public_url
    assert (settings.public_url_warning is not None) == warns


def test_a_wildcard_host_without_public_url_warns_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = load_settings({"IRIS_HOST": WILDCARD, "IRIS_PORT": "9001", "IRIS_DATA_DIR": str(tmp_path)})
    with caplog.at_level(logging.WARNING, logger="iris"):
        create_app(settings)
    [warning] = [r.getMessage() for r in caplog.records if r.name == "iris"]
    assert "IRIS_PUBLIC_URL" in warning
    assert "http://127.0.0.1:9001" in warning
