"""Iris's Prometheus metric families, and how a scrape collects them from one or many processes.

The families are ``prometheus_client`` metrics in its default registry, created once per process (the
first :func:`process_metrics` call, never at import): Litestar's HTTP middleware registers its own
there too, and prometheus_client's multiprocess mode, the way several worker processes on one host
share their counts, works on that registry. With ``PROMETHEUS_MULTIPROC_DIR`` set, every process
writes its values to memory-mapped files in that directory and a scrape of any process merges all of
them (:func:`exposition`); without it a scrape reports the process it reaches.

Labels are bounded sets: model references of the catalogue, tool names of the server (frontend tools
are all ``client``), error codes, outcomes, quota limits — never a user, thread or run id.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar, cast

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
    values,
)

SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
"""The GenAI semantic conventions' advice for operation duration and time to first chunk."""
TOKEN_BUCKETS = tuple(float(4**n) for n in range(14))
"""1, 4, 16, … 67,108,864: the GenAI conventions' advice for ``gen_ai.client.token.usage``."""
RUN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
WAIT_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
TOOL_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
HTTP_PREFIX = "iris_http"
M = TypeVar("M", Counter, Gauge, Histogram)
"""Litestar's Prometheus middleware names its families ``iris_http_requests_total`` and so on."""

GEN_AI_LABELS = ("gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model")


@dataclass(frozen=True, slots=True)
class Metrics:
    """Every family Iris records besides the HTTP ones (see docs/operations.md for what each means)."""

    runs_started: Counter
    runs_finished: Counter
    runs_failed: Counter
    run_duration: Histogram
    active_runs: Gauge
    active_streams: Gauge
    operation_duration: Histogram
    time_to_first_chunk: Histogram
    token_usage: Histogram
    tool_calls: Counter
    tool_duration: Histogram
    quota_refusals: Counter
    problems: Counter
    db_write_wait: Histogram
    model_retries: Counter
    model_fallbacks: Counter
    model_cooldowns: Counter


@cache
def process_metrics() -> Metrics:
    """This process's metric families, made on the first call (prometheus_client's registry is per
    process, so every app in it shares them). Counters get no ``_created`` series (a timestamp per
    label set that dashboards never use)."""
    disable_created_metrics()  # type: ignore[no-untyped-call]
    return Metrics(
        runs_started=Counter("iris_runs_started", "Runs started (stored and stateless)", ["model"]),
        runs_finished=Counter(
            "iris_runs_finished", "Runs that ended with RUN_FINISHED, by outcome", ["model", "outcome"]
        ),
        runs_failed=Counter(
            "iris_runs_failed", "Runs that ended with RUN_ERROR, by its code", ["model", "code"]
        ),
        run_duration=Histogram(
            "iris_run_duration_seconds",
            "From RUN_STARTED to the terminal event",
            ["model"],
            buckets=RUN_BUCKETS,
        ),
        active_runs=Gauge("iris_active_runs", "Runs executing now", multiprocess_mode="livesum"),
        active_streams=Gauge(
            "iris_active_streams", "Event streams (SSE) open to clients now", multiprocess_mode="livesum"
        ),
        operation_duration=Histogram(
            "gen_ai_client_operation_duration_seconds",
            "One model turn, from the request to the end of its stream (GenAI semantic conventions)",
            [*GEN_AI_LABELS, "error_type"],
            buckets=SECONDS_BUCKETS,
        ),
        time_to_first_chunk=Histogram(
            "gen_ai_client_operation_time_to_first_chunk_seconds",
            "From a model turn's request to its first content (text, reasoning or tool call)",
            GEN_AI_LABELS,
            buckets=SECONDS_BUCKETS,
        ),
        token_usage=Histogram(
            "gen_ai_client_token_usage",
            "Tokens per model turn as the vendor reported them, by kind "
            "(input, output, reasoning, cached, image)",
            [*GEN_AI_LABELS, "gen_ai_token_type"],
            buckets=TOKEN_BUCKETS,
        ),
        tool_calls=Counter("iris_tool_calls", "Tool calls by tool and outcome", ["tool", "outcome"]),
        tool_duration=Histogram(
            "iris_tool_call_duration_seconds", "Server tools' run time", ["tool"], buckets=TOOL_BUCKETS
        ),
        quota_refusals=Counter("iris_quota_refusals", "Requests refused by a quota (429)", ["limit"]),
        problems=Counter("iris_problems", "problem+json answers, by status and code", ["status", "code"]),
        db_write_wait=Histogram(
            "iris_db_write_wait_seconds",
            "How long a SQLite write transaction waited for its turn (this process's writers, then "
            "other processes holding the file)",
            buckets=WAIT_BUCKETS,
        ),
        model_retries=Counter(
            "iris_model_retries", "Vendor requests tried again on the same model", ["model", "code"]
        ),
        model_fallbacks=Counter(
            "iris_model_fallbacks",
            "Runs that moved to a fallback model before any content streamed",
            ["from_model", "to_model", "code"],
        ),
        model_cooldowns=Counter(
            "iris_model_cooldowns", "Times a model that kept failing was cooled down", ["model"]
        ),
    )


_CHILDREN: dict[tuple[int, tuple[str, ...]], Any] = {}


def labelled(metric: M, *values: str) -> M:
    """``metric.labels(*values)``, remembered: prometheus_client validates the labels and takes a lock on
    every ``labels()`` call, several microseconds that a run would pay a dozen times. Label sets are few
    (that is what keeps them low-cardinality), so the children are kept for the process's life."""
    key = (id(metric), values)
    child = _CHILDREN.get(key)
    if child is None:
        child = _CHILDREN[key] = metric.labels(*values)
    return cast("M", child)


def check_multiprocess(directory: str | None) -> str | None:
    """What is wrong with the multiprocess set-up, or ``None``: prometheus_client chooses its value
    store when it is first imported, from ``PROMETHEUS_MULTIPROC_DIR``, so the variable must be in the
    process environment by then, naming a directory that exists."""
    if directory is None:
        return None
    if not getattr(values.ValueClass, "_multiprocess", False):
        return "PROMETHEUS_MULTIPROC_DIR was set after prometheus_client was imported; set it before start"
    if not os.path.isdir(directory):
        return f"PROMETHEUS_MULTIPROC_DIR={directory} is not a directory"
    return None


_LIVE_FILE = re.compile(r"gauge_live\w+?_(\d+)\.db$")


def _forget_dead_processes(directory: str) -> None:
    """Drop the live gauges (active runs and streams) of worker processes that died without saying so:
    a killed worker's files would otherwise count its runs as active for ever."""
    for path in glob.glob(os.path.join(directory, "gauge_live*_*.db")):
        match = _LIVE_FILE.search(path)
        if match is None:
            continue
        pid = int(match.group(1))
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
        except PermissionError:
            pass  # alive, another user's


def exposition(directory: str | None) -> tuple[bytes, str]:
    """The text a scrape answers (and its content type): this process's registry, or, in multiprocess
    mode, every process's values merged from ``directory``."""
    if directory is None:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    _forget_dead_processes(directory)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    return generate_latest(registry), CONTENT_TYPE_LATEST


def process_exited(directory: str | None) -> None:
    """At shutdown: this process's live gauges no longer count (its counters and histograms stay)."""
    if directory is not None:
        multiprocess.mark_process_dead(os.getpid(), directory)  # type: ignore[no-untyped-call]
