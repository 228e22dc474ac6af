"""RFC 9457 problem+json for every error, ours and Litestar's, so clients parse one shape."""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec
from advanced_alchemy.exceptions import (
    DuplicateKeyError,
    ForeignKeyError,
    IntegrityError,
    NotFoundError,
    RepositoryError,
)
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.types import ExceptionHandlersMap

from iris.app.errors import (
    Conflict,
    DatabaseUnavailable,
    IrisError,
    MigrationsPending,
    NotFound,
    QuotaExceeded,
    ServiceUnavailable,
)
from iris.app.persistence.availability import RETRY_AFTER_SECONDS, cause, database_unavailable
from iris.app.storage.base import StorageError
from iris.app.telemetry import Telemetry
from iris.providers.wire import WireStruct

log = logging.getLogger("iris.errors")

PROBLEM_JSON = "application/problem+json"

# Litestar raises these for requests that never reach a handler; the codes are part of the API.
_HTTP_STATUS_CODES: dict[int, str] = {
    400: "malformed_body",  # Litestar raises bare 400s when it cannot decode the body
    401: "unauthorized",
    403: "forbidden",
    404: "route_not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


class FieldError(WireStruct, omit_defaults=True):
    """One failed field of a validation error."""

    field: str | None = None
    message: str = ""
    source: str | None = None


class Problem(WireStruct, omit_defaults=True):
    """An RFC 9457 problem document with Iris's stable ``code`` extension."""

    type: str
    title: str
    status: int
    code: str
    detail: str | None = None
    instance: str | None = None
    field: str | None = None
    errors: list[FieldError] | None = None
    extra: dict[str, Any] | None = None


def _response(problem: Problem, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(
        content=msgspec.json.encode(problem),
        status_code=problem.status,
        media_type=PROBLEM_JSON,
        headers=headers,
    )


def problem(
    request: Request[Any, Any, Any],
    *,
    status: int,
    code: str,
    title: str,
    detail: str | None,
    field: str | None = None,
    errors: list[FieldError] | None = None,
    extra: dict[str, Any] | None = None,
) -> Problem:
    """Build the problem document for ``request``; ``type`` is a stable URN per code. Every problem is
    counted (``iris_problems_total``, quota refusals also by limit)."""
    telemetry: Telemetry | None = getattr(request.app.state, "telemetry", None)
    if telemetry is not None:
        telemetry.problem(status, code, extra)
    return Problem(
        type=f"urn:iris:problem:{code}",
        title=title,
        status=status,
        code=code,
        detail=detail,
        instance=request.url.path,
        field=field,
        errors=errors,
        extra=extra or None,
    )


def _iris_error(request: Request[Any, Any, Any], exc: IrisError) -> Response[bytes]:
    headers: dict[str, str] | None = None
    if exc.status_code == 401:
        headers = {"WWW-Authenticate": 'Bearer realm="iris"'}
    elif isinstance(exc, DatabaseUnavailable | MigrationsPending):
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    elif isinstance(exc, QuotaExceeded):
        headers = {"Retry-After": str(exc.retry_after)}
    body = problem(
        request,
        status=exc.status_code,
        code=exc.code,
        title=exc.title,
        detail=exc.detail,
        field=exc.field,
        extra=exc.extra,
    )
    return _response(body, headers)


# msgspec names the offending key in the message for missing/unknown fields; Litestar then
# reports the enclosing object ("data" for the body root) as the key.
_NAMED_FIELD = re.compile(r"field `([^`]+)`")


def _field_name(key: Any, message: str, source: Any) -> str | None:
    parent = None if key is None or (source == "body" and key == "data") else str(key)
    named = _NAMED_FIELD.search(message)
    if named:
        return f"{parent}.{named.group(1)}" if parent else named.group(1)
    return parent


def field_errors(extra: Any) -> list[FieldError]:
    if not isinstance(extra, list):
        return []
    out: list[FieldError] = []
    for item in extra:
        if isinstance(item, dict):
            message = str(item.get("message", ""))
            source = item.get("source")
            out.append(
                FieldError(
                    field=_field_name(item.get("key"), message, source),
                    message=message,
                    source=None if source is None else str(source),
                )
            )
    return out


def _validation_error(request: Request[Any, Any, Any], exc: ValidationException) -> Response[bytes]:
    errors = field_errors(exc.extra)
    first = next((e.field for e in errors if e.field), None)
    detail = "; ".join(f"{e.field}: {e.message}" if e.field else e.message for e in errors) or exc.detail
    # Without field errors Litestar could not even decode the body (malformed JSON, bad multipart).
    body = problem(
        request,
        status=422 if errors else 400,
        code="validation_failed" if errors else "malformed_body",
        title="Request validation failed" if errors else "Malformed request body",
        detail=detail,
        field=first,
        errors=errors or None,
    )
    return _response(body)


def _http_exception(request: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    status = exc.status_code
    if status >= 500:
        return _internal_error(request, exc)
    code = _HTTP_STATUS_CODES.get(status, "http_error")
    body = problem(request, status=status, code=code, title=exc.detail or "Error", detail=exc.detail)
    return _response(body, exc.headers)


def _repository_error(request: Request[Any, Any, Any], exc: RepositoryError) -> Response[bytes]:
    if database_unavailable(exc):
        return _database_unavailable(request, exc)
    if isinstance(exc, NotFoundError):
        return _iris_error(request, NotFound("The resource does not exist."))
    if isinstance(exc, DuplicateKeyError | IntegrityError | ForeignKeyError):
        return _iris_error(request, Conflict("The change conflicts with stored data."))
    return _internal_error(request, exc)


def _storage_error(request: Request[Any, Any, Any], exc: StorageError) -> Response[bytes]:
    log.warning(
        "%s %s: 503 storage_unavailable: %s",
        request.method,
        request.url.path,
        exc,
        extra={"code": "storage_unavailable"},
    )
    return _iris_error(request, ServiceUnavailable("Storage is not available.", code="storage_unavailable"))


def _database_unavailable(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    # Documented and expected while the database is down or locked: one line, no traceback.
    log.warning(
        "%s %s: 503 database_unavailable: %s",
        request.method,
        request.url.path,
        cause(exc),
        extra={"code": "database_unavailable"},
    )
    return _iris_error(request, DatabaseUnavailable("The database is unavailable; try again shortly."))


def _internal_error(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    if database_unavailable(exc):
        return _database_unavailable(request, exc)
    log.exception(
        "unhandled error on %s %s",
        request.method,
        request.url.path,
        exc_info=exc,
        extra={"code": "internal_error"},
    )
    body = problem(
        request,
        status=500,
        code="internal_error",
        title="Internal server error",
        detail="Something went wrong on our side; it has been logged.",
    )
    return _response(body)


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    IrisError: _iris_error,
    ValidationException: _validation_error,
    HTTPException: _http_exception,
    RepositoryError: _repository_error,
    StorageError: _storage_error,
    Exception: _internal_error,
}
