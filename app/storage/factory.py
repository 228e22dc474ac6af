"""Build the configured storage backend from settings."""

from __future__ import annotations

from iris.app.settings import Settings
from iris.app.storage.base import Storage
from iris.app.storage.local import LocalStorage
from iris.app.storage.supabase import SupabaseStorage
from iris.app.storage.tokens import derive_storage_secret


def create_storage(settings: Settings) -> Storage:
    """``local`` (files under the data directory), ``supabase`` (Storage REST API with the service key)
    or ``s3`` (an S3-compatible bucket, credentials from the AWS chain)."""
    if settings.storage == "supabase":
        if not settings.supabase_url or not settings.supabase_service_key:
            raise ValueError("IRIS_STORAGE=supabase needs IRIS_SUPABASE_URL and IRIS_SUPABASE_SERVICE_KEY")
        return SupabaseStorage(settings.supabase_url, settings.supabase_service_key, settings.storage_bucket)
    assert settings.jwt_secret, "prepare() fills the secret"
    secret = derive_storage_secret(settings.jwt_secret)
    if settings.storage == "s3":
        try:
            from iris.app.storage.s3 import S3Storage  # aiobotocore is imported only when it is used
        except ImportError as exc:
            raise ValueError("IRIS_STORAGE=s3 needs the s3 extra: pip install 'iris[s3]'") from exc
        return S3Storage(
            settings.storage_bucket,
            public_url=settings.effective_public_url,
            secret=secret,
            region=settings.s3_region,
            endpoint_url=settings.s3_endpoint_url,
            addressing_style=settings.s3_addressing_style,
            timeout=settings.s3_timeout_seconds,
        )
    return LocalStorage(
        settings.data_path / "storage",
        settings.storage_bucket,
        public_url=settings.effective_public_url,
        secret=secret,
    )
