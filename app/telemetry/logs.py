"""Log lines that say which run they belong to: readable text by default, one JSON object per line
with ``IRIS_LOG_FORMAT=json``.

A run sets its ids (:func:`run_context`) in a context variable for as long as it executes; every line
logged by it, or by a task it starts, carries them, with the trace id of the run (or of the request a
line is logged in). The formatters read them when the line is written, so no logger needs a filter
and a line logged outside any run simply has none.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from litestar.logging.config import LoggingConfig
from opentelemetry import trace

from iris.app.settings import Settings


@dataclass(frozen=True, slots=True)
class RunIds:
    run_id: str
    thread_id: str
    trace_id: str | None = None


_RUN: contextvars.ContextVar[RunIds | None] = contextvars.ContextVar("iris_run", default=None)


@contextlib.contextmanager
def run_context(ids: RunIds) -> Iterator[None]:
    """While this runs (and in every task it starts), log lines carry ``ids``."""
    token = _RUN.set(ids)
    try:
        yield
    finally:
        _RUN.reset(token)


def _current_trace_id() -> str | None:
    """The trace of the span current where the line is logged (an HTTP request's, outside runs)."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def line_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The ids a line carries: its run's, the trace's, and the problem ``code`` a caller passed as
    ``extra={"code": …}``."""
    fields: dict[str, Any] = {}
    ids = _RUN.get()
    if ids is not None:
        fields["run_id"] = ids.run_id
        fields["thread_id"] = ids.thread_id
    trace_id = (ids.trace_id if ids is not None else None) or _current_trace_id()
    if trace_id is not None:
        fields["trace_id"] = trace_id
    code = getattr(record, "code", None)
    if isinstance(code, str):
        fields["code"] = code
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, the
    ids of :func:`line_fields`, and ``exception`` (the traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **line_fields(record),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message`` and, when there are any, the ids as ``key=value`` at the end."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = line_fields(record)
        if not fields:
            return text
        head, sep, tail = text.partition("\n")  # the ids go on the message line, before a traceback
        return head + " [" + " ".join(f"{k}={v}" for k, v in fields.items()) + "]" + sep + tail


def log_config(settings: Settings) -> dict[str, Any]:
    """A :func:`logging.config.dictConfig` of the configured format: one stderr handler that formats
    each line where it is logged (so the run's ids are at hand), the root logger and Litestar's and
    uvicorn's loggers (access log included) sent through it; the vendor client's chatter only at
    ``debug`` (see :data:`QUIET_LOGGERS`)."""
    formatter = JsonFormatter if settings.log_format == "json" else TextFormatter
    level = settings.log_level.upper()
    loggers = {name: {"handlers": [], "level": level, "propagate": True} for name in OWN_LOGGERS}
    quiet = level if level == "DEBUG" else "WARNING"  # always set: a re-configuration keeps old levels
    loggers |= {name: {"level": quiet} for name in QUIET_LOGGERS}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"iris": {"()": formatter}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "iris"}},
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": loggers,
    }


OWN_LOGGERS = ("litestar", "uvicorn", "uvicorn.error", "uvicorn.access")
"""Loggers that come with handlers of their own: they are sent to the root's instead."""

QUIET_LOGGERS = ("httpx", "httpcore")
"""The vendor client's loggers: httpx writes a line at ``info`` for every request ("HTTP Request: POST
… 200 OK"), which says less than the run's own telemetry (its spans, ``iris/attempts``, the metrics)
and costs a measurable share of a run's CPU (ADR 0064). Below ``warning`` they log only when
``IRIS_LOG_LEVEL=debug``."""


def litestar_logging(settings: Settings) -> LoggingConfig:
    """The same configuration as Litestar's ``logging_config``, which applies it when the app is built
    (whatever server runs the app: `iris serve`, or uvicorn/gunicorn given ``iris.app.asgi:create_app``)."""
    config = log_config(settings)
    return LoggingConfig(
        formatters=config["formatters"],
        handlers=config["handlers"],
        root=config["root"],
        loggers=config["loggers"],
        disable_existing_loggers=False,
    )
