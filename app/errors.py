"""The one error hierarchy. Every error a client can see is an :class:`IrisError`.

Each subclass fixes an HTTP status and a default stable ``code``; raise sites may give a more
specific ``code`` (``model_lacks_vision``, ``thread_not_found`` …) and the ``field`` that failed.
``iris.app.api.problems`` turns them, and Litestar's own exceptions, into RFC 9457 problem+json.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class IrisError(Exception):
    """Base of all client-visible errors."""

    status_code: ClassVar[int] = 400
    default_code: ClassVar[str] = "bad_request"
    title: ClassVar[str] = "Bad request"

    def __init__(
        self,
        detail: str,
        *,
        code: str | None = None,
        field: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code or self.default_code
        self.field = field
        self.extra = dict(extra or {})


class BadRequest(IrisError):
    """The request is malformed in a way no field-level rule describes."""


class Unauthorized(IrisError):
    """No usable bearer token."""

    status_code = 401
    default_code = "unauthorized"
    title = "Authentication required"


class Forbidden(IrisError):
    """Authenticated, but this principal may not do this."""

    status_code = 403
    default_code = "forbidden"
    title = "Forbidden"


class NotFound(IrisError):
    """Absent, or owned by someone else (the two are indistinguishable on purpose)."""

    status_code = 404
    default_code = "not_found"
    title = "Not found"


class Conflict(IrisError):
    """The request contradicts what is stored (duplicate key, resource in use)."""

    status_code = 409
    default_code = "conflict"
    title = "Conflict"


class PayloadTooLarge(IrisError):
    """A body or file is over its limit."""

    status_code = 413
    default_code = "request_too_large"
    title = "Payload too large"


class UnsupportedMediaType(IrisError):
    """The bytes are not a type Iris accepts."""

    status_code = 415
    default_code = "unsupported_media_type"
    title = "Unsupported media type"


class Unprocessable(IrisError):
    """Well-formed, but breaks a rule (validation, capability, URL policy)."""

    status_code = 422
    default_code = "validation_failed"
    title = "Unprocessable content"


class QuotaExceeded(IrisError):
    """A per-principal (or per-address) quota is used up; ``Retry-After`` says when it frees up."""

    status_code = 429
    default_code = "quota_exceeded"
    title = "Quota exceeded"

    def __init__(
        self, detail: str, *, limit: str, allowed: float, retry_after: int, code: str | None = None
    ) -> None:
        super().__init__(
            detail, code=code, extra={"limit": limit, "allowed": allowed, "retryAfterSeconds": retry_after}
        )
        self.retry_after = retry_after


class BadGateway(IrisError):
    """A model provider failed a request that is answered whole, not streamed."""

    status_code = 502
    default_code = "provider_other"
    title = "The model provider failed"


class UpstreamFailed(IrisError):
    """A server Iris asked on the caller's behalf (an MCP server) failed or refused."""

    status_code = 502
    default_code = "upstream_failed"
    title = "A server Iris asked failed"


class ServiceUnavailable(IrisError):
    """A dependency (database, migrations) is not ready."""

    status_code = 503
    default_code = "not_ready"
    title = "Service unavailable"


class MigrationsPending(ServiceUnavailable):
    """The database's schema is behind this version of Iris; the answer carries ``Retry-After`` and a
    ``hint`` naming the command that fixes it."""

    default_code = "migrations_pending"
    title = "The database is not migrated"

    def __init__(self) -> None:
        super().__init__(
            "The database schema is behind this version of Iris. Run `alembic upgrade head` (`just migrate`) "
            "against it; this process answers as soon as it is at head, without a restart.",
            extra={"hint": "alembic upgrade head"},
        )


class DatabaseUnavailable(ServiceUnavailable):
    """The database cannot be used right now (stopped, unreachable, locked past its deadline); the
    answer carries ``Retry-After``."""

    default_code = "database_unavailable"
    title = "The database is unavailable"
