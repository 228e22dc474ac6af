"""The problem ``code`` values operations document, by status: those every operation of a kind
shares (added by :func:`iris.app.api.openapi.operations.documented`) and the lists routes declare."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import get_args

from iris.app.runs import DEADLINE_MESSAGES
from iris.providers.errors import ProviderErrorKind

AUTH = {
    401: (
        "missing_token",
        "invalid_token",
        "token_expired",
        "token_issuer",
        "token_audience",
        "token_algorithm",
        "token_key_unknown",
        "invalid_api_key",
    ),
    403: ("key_surface_forbidden",),
    429: ("rate_limited",),
}
JSON_BODY = {
    400: ("malformed_body",),
    413: ("request_too_large",),
    422: ("json_too_deep", "validation_failed"),
}
# Any operation may meet an unavailable database (app/persistence/availability.py), or one whose schema is
# behind (app/persistence/migrations.py's SchemaGate).
ALWAYS = {500: ("internal_error",), 503: ("database_unavailable", "migrations_pending")}

Problems = Mapping[int, Iterable[str]]


AGUI_INPUT_CODES = (
    "file_source_unsupported",
    "image_url_part_unsupported",
    "inline_data_unsupported",
    "media_kind_unsupported",
)
"""Part shapes ``RunAgentInput`` messages may not carry (:mod:`iris.app.agui.input`)."""

INLINE_MEDIA_CHECKS: dict[int, tuple[str, ...]] = {
    413: ("file_too_large",),
    415: ("unsupported_media_type",),
    422: (
        "audio_out_of_range",
        "audio_too_long",
        "audio_undecodable",
        "document_encrypted",
        "document_too_many_pages",
        "document_undecodable",
        "invalid_base64",
    ),
}
"""What a document or audio clip sent inline (``data``) is checked for, as an upload is
(:mod:`iris.app.media.inline_uploads`); 415 is a polyglot."""

_DEADLINE_CODES = tuple(DEADLINE_MESSAGES)

_IMAGE_CHECKS = (
    "attachment_url_rejected",
    "image_type_unsupported",
    "model_lacks_vision",
    "too_many_audio",
    "too_many_document",
    "too_many_images",
    "unsupported_media_type",
    "unsupported_part",
    "upload_not_found",
)

RUN_CHECKS: dict[int, tuple[str, ...]] = {
    403: ("agent_not_for_guests", "key_agent_forbidden", "key_model_forbidden"),
    404: ("agent_not_found", "thread_not_found"),
    409: ("run_exists", "run_in_progress"),
    422: (
        *_IMAGE_CHECKS,
        "empty_message",
        "interrupt_expired",
        "interrupt_pending",
        "interrupt_unanswered",
        "model_not_found",
        "model_not_in_agent",
        "no_new_message",
        "prompt_failed",
        "prompt_not_found",
        "request_too_large",
    ),
    429: ("budget_exceeded", "quota_exceeded"),
    503: ("provider_key_missing", "provider_unavailable", "storage_unavailable"),
}
"""What a run is checked for before its stream opens (:mod:`iris.app.runs.intake.prepare`), on either
surface."""

STATELESS_CHECKS: dict[int, tuple[str, ...]] = {
    403: ("model_not_for_guests", "key_model_forbidden"),
    422: (*_IMAGE_CHECKS, "empty_message", "model_not_found", "part_type_unsupported", "request_too_large"),
    429: ("budget_exceeded", "quota_exceeded"),
    # Without streaming, a failed run is a 502 with the code its RUN_ERROR would carry.
    502: (
        *(f"provider_{kind}" for kind in get_args(ProviderErrorKind)),
        *_DEADLINE_CODES,
        "internal_error",
        "invalid_output",
        "request_too_large",
        "storage_unavailable",
        "unsupported_part",
    ),
    503: ("provider_key_missing", "provider_unavailable"),
}
"""``POST /api/llm/chat`` (:mod:`iris.app.runs.stateless.chat`)."""
