"""Every ``/v1`` error in OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, with the
statuses OpenAI uses, so each SDK raises its own exception class (``BadRequestError``,
``AuthenticationError``, ``NotFoundError``, ``RateLimitError`` …).

``code`` is Iris's stable code, the same one problem+json carries elsewhere (``model_not_found``,
``invalid_data_url``, ``quota_exceeded`` …); ``param`` is the OpenAI field that failed. Iris's 422s
are OpenAI's 400s (so are 415s); an unknown or closed model is a 404 ``model_not_found``; a 429
carries ``Retry-After``.
Routing errors are Litestar's, raised before any controller is chosen, so the surface is the path:
:data:`EXCEPTION_HANDLERS_BY_SURFACE` (the app's handlers) answers everything under ``/v1`` in OpenAI's
shape and the rest of the API in problem+json. A path ``/v1`` does not serve is OpenAI's 404
``unknown_url``, a method it does not take 405 ``method_not_allowed``: an SDK calling an API Iris lacks
(``/v1/embeddings``) raises its own error, not a parse failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import ValidationException
from litestar.types import ExceptionHandlersMap

from iris.app.agui.events import RunError
from iris.app.api.openai.wire import ErrorAnswer, ErrorBody
from iris.app.api.problems import EXCEPTION_HANDLERS, PROBLEM_JSON, field_errors

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}
_RUN_STATUS = {
    "provider_rate_limit": 429,
    "provider_unavailable": 503,
    "provider_timeout": 504,
    "provider_idle_timeout": 504,
    "run_timeout": 504,
    "database_unavailable": 503,
    "storage_unavailable": 503,
    "request_too_large": 400,
    "unsupported_part": 400,
    "model_lacks_vision": 400,
}
"""A run that failed before it answered anything: its code → the status the request gets."""

SURFACE = "/v1"
_KEPT_HEADERS = ("retry-after", "www-authenticate", "allow")


def status_for(status: int, code: str) -> int:
    """OpenAI's status for one of ours: 422 and 415 (a file that is not an image) → 400, an unknown
    model → 404."""
    if code == "model_not_found":
        return 404
    return 400 if status in (415, 422) else status


def error_answer(status: int, code: str, message: str, param: str | None) -> ErrorAnswer:
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return ErrorAnswer(error=ErrorBody(message=message, type=kind, param=param, code=code))


def run_failure(event: RunError) -> tuple[int, ErrorAnswer]:
    """A failed run as an HTTP answer (before anything was streamed) or as a stream's last chunk."""
    code = event.code or "provider_other"
    status = _RUN_STATUS.get(code, 502)
    return status, error_answer(status, code, event.message, None)


def _response(status: int, body: ErrorAnswer, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(
        content=msgspec.json.encode(body), status_code=status, media_type="application/json", headers=headers
    )


def _validation_error(request: Request[Any, Any, Any], exc: ValidationException) -> Response[bytes]:
    """A body that does not decode, or a field of the wrong type: 400, ``param`` naming the field."""
    errors = field_errors(exc.extra)
    first = next((e for e in errors if e.field), None)
    message = "; ".join(f"{e.field}: {e.message}" if e.field else e.message for e in errors) or exc.detail
    code = "validation_failed" if errors else "malformed_body"
    return _response(400, error_answer(400, code, message, first.field if first else None))


def _reshaped(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Any error as the problem+json handlers describe it (status, code, detail, field, headers),
    reshaped: one description of every error, two wire formats."""
    handler = next(h for t, h in EXCEPTION_HANDLERS.items() if isinstance(t, type) and isinstance(exc, t))
    answer = handler(request, exc)
    if answer.media_type != PROBLEM_JSON:
        return answer
    problem = msgspec.json.decode(answer.content)
    code = str(problem.get("code", "error"))
    status = status_for(answer.status_code or 500, code)
    message = str(problem.get("detail") or problem.get("title") or "Error")
    headers = {k: v for k, v in answer.headers.items() if k.lower() in _KEPT_HEADERS}
    if code == "route_not_found":  # the router's: no route has this path
        code, message = "unknown_url", _unknown_url(request)
    elif code == "method_not_allowed":
        message = f"Invalid method for URL ({request.method} {request.url.path})."
    body = error_answer(status, code, message, problem.get("field"))
    return _response(status, body, headers or None)


def _unknown_url(request: Request[Any, Any, Any]) -> str:
    """OpenAI's wording, and what Iris serves instead."""
    return (
        f"Unknown request URL: {request.method} {request.url.path}. Iris serves "
        f"{SURFACE}/chat/completions, {SURFACE}/responses, {SURFACE}/messages and {SURFACE}/models "
        f"under {SURFACE}."
    )


OPENAI_EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    **dict.fromkeys(EXCEPTION_HANDLERS, _reshaped),  # the same keys, so none of the app's wins
    ValidationException: _validation_error,
}


def on_surface(path: str) -> bool:
    """Whether ``path`` is under ``/v1`` (and so answers errors in OpenAI's shape)."""
    return path == SURFACE or path.startswith(SURFACE + "/")


Handler = Callable[[Request[Any, Any, Any], Any], Response[Any]]


def _by_surface(problem_handler: Handler, openai_handler: Handler) -> Handler:
    def handle(request: Request[Any, Any, Any], exc: Any) -> Response[Any]:
        return (openai_handler if on_surface(request.url.path) else problem_handler)(request, exc)

    return handle


EXCEPTION_HANDLERS_BY_SURFACE: ExceptionHandlersMap = {
    kind: _by_surface(handler, OPENAI_EXCEPTION_HANDLERS[kind])
    for kind, handler in EXCEPTION_HANDLERS.items()
}
"""The app's handlers: OpenAI's shape under ``/v1`` (routing errors included), problem+json elsewhere."""
