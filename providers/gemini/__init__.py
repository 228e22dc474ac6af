"""Google's Gemini API; the code is in :mod:`providers.gemini.provider`."""

from providers.gemini.provider import (
    BASE_URL_ENV,
    DEFAULT_BASE_URL,
    EXTRA_GENERATION_CONFIG,
    EXTRA_TOP_LEVEL,
    IMAGE_MIME_TYPES,
    KEY_ENV,
    MAX_IMAGES,
    MAX_INLINE_BYTES,
    MAX_REQUEST_BYTES,
    MODEL_OPTIONS,
    SKIP_SIGNATURE,
    GeminiProvider,
    could_not_fetch,
    create,
    takes_external_urls,
)

__all__ = [
    "BASE_URL_ENV",
    "DEFAULT_BASE_URL",
    "EXTRA_GENERATION_CONFIG",
    "EXTRA_TOP_LEVEL",
    "IMAGE_MIME_TYPES",
    "KEY_ENV",
    "MAX_IMAGES",
    "MAX_INLINE_BYTES",
    "MAX_REQUEST_BYTES",
    "MODEL_OPTIONS",
    "SKIP_SIGNATURE",
    "GeminiProvider",
    "could_not_fetch",
    "create",
    "takes_external_urls",
]
