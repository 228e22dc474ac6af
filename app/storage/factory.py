"""Build the configured storage backend from settings."""

from __future__ import annotations

from app.settings import Settings
from app.storage.base import Storage
from app.storage.local import LocalStorage, derive_storage_secret
from app.storage.supabase import SupabaseStorage


def create_storage(settings: Settings) -> Storage:
    """``local`` (files under the data directory) or ``supabase`` (Storage REST API with the service key)."""
    if settings.storage == "supabase":
        if not settings.supabase_url or not settings.supabase_service_key:
            raise ValueError("IRIS_STORAGE=supabase needs IRIS_SUPABASE_URL and IRIS_SUPABASE_SERVICE_KEY")
        return SupabaseStorage(settings.supabase_url, settings.supabase_service_key, settings.storage_bucket)
    assert settings.jwt_secret, "prepare() fills the secret"
    return LocalStorage(
        settings.data_path / "storage",
        settings.storage_bucket,
        public_url=settings.effective_public_url,
        secret=derive_storage_secret(settings.jwt_secret),
    )
