"""Every error of ``/v1/messages`` in Anthropic's shape, ``{"type": "error", "error": {"type",
"message", "details": {"error_code"}}}``, with the statuses Anthropic uses, so each SDK raises its own
class (``BadRequestError``, ``AuthenticationError``, ``NotFoundError``, ``RateLimitError``,
``OverloadedError`` …).

``details.error_code`` is Iris's stable code, the one problem+json carries elsewhere (the SDKs read it as
``APIStatusError.error_code``). Iris's 422s and 415s are Anthropic's 400 ``invalid_request_error``; an
unknown model is 404 ``not_found_error``; a vendor that is unavailable is 529 ``overloaded_error``, one
that timed out 504 ``timeout_error``, any other upstream failure 500 ``api_error``; a 429 carries
``retry-after``. Routing errors under ``/v1/messages`` (an unknown path, a wrong method) answer in this
shape too: :func:`with_messages_surface` wraps the app's handlers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import ValidationException
from litestar.types import ExceptionHandlersMap

from iris.app.agui.events import RunError
from iris.app.api.anthropic.wire import AnthropicErrorAnswer, AnthropicErrorDetails, AnthropicErrorObject
from iris.app.api.problems import EXCEPTION_HANDLERS, PROBLEM_JSON, field_errors

SURFACE = "/v1/messages"
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_RUN_STATUS = {
    "provider_rate_limit": 429,
    "provider_unavailable": 529,
    "provider_timeout": 504,
    "provider_idle_timeout": 504,
    "run_timeout": 504,
    "request_too_large": 400,
    "unsupported_part": 400,
    "model_lacks_vision": 400,
}
"""A run that failed before it answered anything: its code → the status the request gets."""
_KEPT_HEADERS = ("retry-after", "www-authenticate", "allow")


def status_for(status: int, code: str) -> int:
    """Anthropic's status for one of ours."""
    if code == "model_not_found":
        return 404
    if code in _RUN_STATUS and status >= 500:
        return _RUN_STATUS[code]
    if status in (415, 422):
        return 400
    if status in (502, 503):
        return 529 if code == "provider_unavailable" else 500
    return status


def error_answer(status: int, code: str, message: str) -> AnthropicErrorAnswer:
    kind = _TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return AnthropicErrorAnswer(
        error=AnthropicErrorObject(type=kind, message=message, details=AnthropicErrorDetails(error_code=code))
    )


def run_failure(event: RunError) -> tuple[int, AnthropicErrorAnswer]:
    """A failed run as an HTTP answer (before anything was streamed) or as a stream's ``error`` event."""
    code = event.code or "provider_other"
    status = _RUN_STATUS.get(code, 500)
    return status, error_answer(status, code, event.message)


def error_response(
    status: int, body: AnthropicErrorAnswer, headers: dict[str, str] | None = None
) -> Response[bytes]:
    if status == 429 and not any(k.lower() == "retry-after" for k in headers or {}):
        headers = {"retry-after": "1", **(headers or {})}
    return Response(
        content=msgspec.json.encode(body), status_code=status, media_type="application/json", headers=headers
    )


_FIELDS = {
    "stop": "stop_sequences",
    "response_format": "output_config.format",
    "parallel_tool_calls": "tool_choice.disable_parallel_tool_use",
}
"""The core's names of refused knobs → the Messages fields that set them."""


def _validation_error(request: Request[Any, Any, Any], exc: ValidationException) -> Response[bytes]:
    """A body that does not decode, or a field of the wrong type: 400, naming the field."""
    errors = field_errors(exc.extra)
    message = "; ".join(f"{e.field}: {e.message}" if e.field else e.message for e in errors) or exc.detail
    code = "validation_failed" if errors else "malformed_body"
    return error_response(400, error_answer(400, code, message))


def _reshaped(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Any error as the problem+json handlers describe it, reshaped (one description, two formats)."""
    handler = next(h for t, h in EXCEPTION_HANDLERS.items() if isinstance(t, type) and isinstance(exc, t))
    answer = handler(request, exc)
    if answer.media_type != PROBLEM_JSON:
        return answer
    problem = msgspec.json.decode(answer.content)
    code = str(problem.get("code", "error"))
    status = status_for(answer.status_code or 500, code)
    message = str(problem.get("detail") or problem.get("title") or "Error")
    if field := problem.get("field"):
        named = _FIELDS.get(field, field)
        message = f"{named}: {message.replace(repr(field), repr(named))}"
    headers = {k: v for k, v in answer.headers.items() if k.lower() in _KEPT_HEADERS}
    if code == "route_not_found":
        code, message = "unknown_url", f"Not found: {request.method} {request.url.path}."
    elif code == "method_not_allowed":
        message = f"Invalid method for URL ({request.method} {request.url.path})."
    return error_response(status, error_answer(status, code, message), headers or None)


ANTHROPIC_EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    **dict.fromkeys(EXCEPTION_HANDLERS, _reshaped),
    ValidationException: _validation_error,
}


def on_surface(path: str) -> bool:
    """Whether ``path`` is under ``/v1/messages`` (and so answers errors in Anthropic's shape)."""
    return path == SURFACE or path.startswith(SURFACE + "/")


Handler = Callable[[Request[Any, Any, Any], Any], Response[Any]]


def _by_surface(other: Handler, anthropic: Handler) -> Handler:
    def handle(request: Request[Any, Any, Any], exc: Any) -> Response[Any]:
        return (anthropic if on_surface(request.url.path) else other)(request, exc)

    return handle


def with_messages_surface(handlers: ExceptionHandlersMap) -> ExceptionHandlersMap:
    """``handlers`` with Anthropic's shape under ``/v1/messages`` (routing errors included)."""
    return {
        kind: _by_surface(handler, ANTHROPIC_EXCEPTION_HANDLERS[kind]) for kind, handler in handlers.items()
    }
