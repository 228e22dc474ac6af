"""One app's telemetry: the metrics it records and, when tracing is configured, its spans.

Each operation Iris wants to see gets one object that records both: a run (:class:`RunTelemetry`,
the ``invoke_agent {agent}`` span), a model turn (:class:`ChatTelemetry`, ``chat {model}``), a tool
call (:class:`ToolTelemetry`, ``execute_tool {tool}``). With tracing off they only count; with metrics
off too they do nothing at all. Retries, fallbacks and cool-downs of vendor models have their own
hooks (:meth:`Telemetry.record_retry` and its neighbours), which count them and mark the current span.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from iris.app.telemetry import spans as gen_ai
from iris.app.telemetry.logs import RunIds, run_context
from iris.app.telemetry.metrics import Metrics, labelled
from iris.providers import Message

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

CLIENT_TOOL = "client"
"""The ``tool`` label of every frontend tool: their names come from clients, so they are not labels."""
W3C = TraceContextTextMapPropagator()
UNKNOWN_TOOL = "unknown"
"""The ``tool`` label of a call to a name nobody offered (models invent names)."""


class Telemetry:
    """What an app records; built by :func:`iris.app.telemetry.build_telemetry`, shared by every run."""

    def __init__(
        self, *, metrics: Metrics | None, provider: TracerProvider | None, capture_content: bool = False
    ) -> None:
        self.metrics = metrics
        self.provider = provider
        """``None``: tracing is off, and no span is ever made."""
        self.tracer: Tracer | None = provider.get_tracer("iris") if provider is not None else None
        self.capture_content = capture_content

    def shutdown(self) -> None:
        """Export the spans still buffered, then stop exporting (blocks: call it on a thread)."""
        if self.provider is not None:
            self.provider.shutdown()

    def run(
        self,
        *,
        run_id: str,
        thread_id: str,
        agent: str | None,
        provider_name: str,
        model_id: str,
        model_ref: str,
    ) -> RunTelemetry:
        """The telemetry of one run; enter it for the run's whole life. ``provider_name`` is the
        ``gen_ai.provider.name`` its provider declares
        (:func:`iris.providers.vendor_facts.telemetry_name`)."""
        return RunTelemetry(
            self, run_id=run_id, thread_id=thread_id, agent=agent, provider_name=provider_name,
            model_id=model_id, model_ref=model_ref,
        )  # fmt: skip

    # --- before a stream: refusals and the database ------------------------------------------------

    def problem(self, status: int, code: str, extra: dict[str, Any] | None) -> None:
        """A problem+json answer; a quota refusal also counts under its ``limit``."""
        if self.metrics is None:
            return
        labelled(self.metrics.problems, str(status), code).inc()
        if code == "quota_exceeded" and extra and isinstance(extra.get("limit"), str):
            labelled(self.metrics.quota_refusals, extra["limit"]).inc()

    def write_wait(self, seconds: float) -> None:
        """A SQLite write transaction waited ``seconds`` for its turn."""
        if self.metrics is not None:
            self.metrics.db_write_wait.observe(seconds)

    @contextlib.contextmanager
    def stream_open(self) -> Iterator[None]:
        """An event stream is open to a client (counted in ``iris_active_streams``)."""
        if self.metrics is None:
            yield
            return
        self.metrics.active_streams.inc()
        try:
            yield
        finally:
            self.metrics.active_streams.dec()

    # --- vendor retries and fallbacks ----------------------------------------------------------------

    def record_retry(self, model: str, code: str) -> None:
        """A vendor request on ``model`` (a catalogue ref, ``provider/modelId``) failed with ``code``
        and is tried again on the same model."""
        if self.metrics is not None:
            labelled(self.metrics.model_retries, model, code).inc()
        self._span_event("iris.retry", {"iris.model": model, gen_ai.ERROR_TYPE: code})

    def record_fallback(self, from_model: str, to_model: str, code: str) -> None:
        """The run moves from ``from_model`` (which failed with ``code``) to ``to_model``."""
        if self.metrics is not None:
            labelled(self.metrics.model_fallbacks, from_model, to_model, code).inc()
        self._span_event(
            "iris.fallback",
            {"iris.from_model": from_model, "iris.to_model": to_model, gen_ai.ERROR_TYPE: code},
        )

    def record_cooldown(self, model: str) -> None:
        """``model`` kept failing and is cooled down (skipped for a while, by every process)."""
        if self.metrics is not None:
            labelled(self.metrics.model_cooldowns, model).inc()
        self._span_event("iris.cooldown", {"iris.model": model})

    def _span_event(self, name: str, attributes: dict[str, str]) -> None:
        """An event on the current span (the run's or its model turn's), when one is recording."""
        if self.tracer is None:
            return
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event(name, attributes)

    # --- spans -------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def follow(self, run_id: str, traceparent: str | None) -> Iterator[None]:
        """A client following a run's stream (a re-attach): a ``follow_run`` span in the run's own trace
        (``traceparent`` names its ``invoke_agent`` span), linked to the request's span, so a run keeps
        one trace however often its client reconnects. The span is never made current: nothing runs
        under it, and a stream's generator may be closed from another context."""
        if self.tracer is None or traceparent is None:
            yield
            return
        request = trace.get_current_span().get_span_context()
        parent = W3C.extract({"traceparent": traceparent})
        if not trace.get_current_span(parent).get_span_context().trace_flags.sampled:
            yield  # the run's trace was not sampled: nor is its follower
            return
        span = self.tracer.start_span(
            "follow_run",
            context=parent,
            links=[Link(request)] if request.is_valid else [],
            attributes={"iris.run.id": run_id},
        )
        try:
            yield
        finally:
            span.end()


def opened(
    stack: contextlib.ExitStack,
    tracer: Tracer,
    name: str,
    kind: SpanKind,
    attributes: Callable[[], dict[str, Any]],
) -> Span | None:
    """A span under the current one, current itself until ``stack`` closes (then it ends). None when
    the current one is not recorded: its trace was not sampled, and every sampler Iris offers decides a
    trace's spans alike, so an unsampled run costs no spans of its own, and its ``attributes`` are never
    built (they are asked for only once the span will record). Exceptions are not recorded as span
    events: ``error.type`` holds the stable code instead."""
    parent = trace.get_current_span()
    if parent.get_span_context().is_valid and not parent.is_recording():
        return None
    span = tracer.start_span(name, kind=kind, attributes=attributes())
    stack.enter_context(trace.use_span(span, end_on_exit=True, record_exception=False))
    return span


class RunTelemetry:
    """One run: ``invoke_agent {agent}``, ``iris_runs_*`` and the run's ids on its log lines."""

    def __init__(
        self,
        telemetry: Telemetry,
        *,
        run_id: str,
        thread_id: str,
        agent: str | None,
        provider_name: str,
        model_id: str,
        model_ref: str,
    ) -> None:
        self.telemetry = telemetry
        self.run_id, self.thread_id, self.agent = run_id, thread_id, agent
        self.provider_name, self.model_id, self.model_ref = provider_name, model_id, model_ref
        self.span: Span | None = None
        self._trace: SpanContext | None = None
        """The run's span context, or its request's when that one was not sampled (then no span is made)."""
        self.trace_ids: dict[str, str] = {}
        """``traceId`` (hex) and ``traceparent`` (W3C) of the run's span, for ``RUN_STARTED.metadata``
        and followers in other processes, once entered; empty when tracing is off."""
        self._started = 0.0
        self._stack = contextlib.ExitStack()

    def _trace_ids(self) -> dict[str, str]:
        if self._trace is None or not self._trace.is_valid:
            return {}
        carrier: dict[str, str] = {}
        W3C.inject(carrier, context=trace.set_span_in_context(trace.NonRecordingSpan(self._trace)))
        return {"traceId": format(self._trace.trace_id, "032x"), **carrier}

    def __enter__(self) -> RunTelemetry:
        self._started = time.perf_counter()
        metrics, tracer = self.telemetry.metrics, self.telemetry.tracer
        if metrics is not None:
            labelled(metrics.runs_started, self.model_ref).inc()
            metrics.active_runs.inc()
        if tracer is not None:
            name = "invoke_agent" if self.agent is None else f"invoke_agent {self.agent}"
            self._trace = trace.get_current_span().get_span_context()
            self.span = opened(self._stack, tracer, name, SpanKind.INTERNAL, self._attributes)
            if self.span is not None:
                self._trace = self.span.get_span_context()
        self.trace_ids = self._trace_ids()  # made once: the logs, RUN_STARTED and followers share it
        trace_id = self.trace_ids.get("traceId")
        self._stack.enter_context(run_context(RunIds(self.run_id, self.thread_id, trace_id)))
        return self

    def _attributes(self) -> dict[str, Any]:
        attributes = {
            gen_ai.OPERATION: "invoke_agent",
            gen_ai.CONVERSATION: self.thread_id,
            gen_ai.PROVIDER: self.provider_name,
            gen_ai.REQUEST_MODEL: self.model_id,
            "iris.run.id": self.run_id,
            "iris.model": self.model_ref,
        }
        if self.agent is not None:
            attributes[gen_ai.AGENT_NAME] = self.agent
        return attributes

    def __exit__(self, *exc_info: object) -> None:
        if self.telemetry.metrics is not None:
            self.telemetry.metrics.active_runs.dec()
            labelled(self.telemetry.metrics.run_duration, self.model_ref).observe(
                time.perf_counter() - self._started
            )
        self._stack.close()

    def finished(self, outcome: str) -> None:
        """The run ended with ``RUN_FINISHED`` (``success``, ``interrupt``, ``cancelled``)."""
        if self.telemetry.metrics is not None:
            labelled(self.telemetry.metrics.runs_finished, self.model_ref, outcome).inc()
        if self.span is not None:
            self.span.set_attribute("iris.run.outcome", outcome)

    def failed(self, code: str) -> None:
        """The run ended with ``RUN_ERROR`` ``code``."""
        if self.telemetry.metrics is not None:
            labelled(self.telemetry.metrics.runs_failed, self.model_ref, code).inc()
        if self.span is not None:
            self.span.set_attribute(gen_ai.ERROR_TYPE, code)
            self.span.set_status(Status(StatusCode.ERROR, code))

    def chat(self, *, provider_name: str | None = None, model_id: str | None = None) -> ChatTelemetry:
        """One model turn (by default on the run's model; a fallback names its own)."""
        return ChatTelemetry(
            self, provider_name=provider_name or self.provider_name, model_id=model_id or self.model_id
        )

    def tool(self, name: str, call_id: str, *, known: bool) -> ToolTelemetry:
        """A server tool call about to run (``known``: a tool the run offered)."""
        return ToolTelemetry(self, name, call_id, label=name if known else UNKNOWN_TOOL)

    def tool_outcome(self, name: str | None, outcome: str, *, known: bool = True) -> None:
        """A call that is not run here: ``approval_requested``, ``declined`` (by the user),
        ``refused`` (the run's turns are spent) or ``pending`` (a frontend tool's: ``name`` ``None``)."""
        if self.telemetry.metrics is not None:
            label = CLIENT_TOOL if name is None else name if known else UNKNOWN_TOOL
            labelled(self.telemetry.metrics.tool_calls, label, outcome).inc()


class ChatTelemetry:
    """One model turn: ``chat {model}`` (kind CLIENT) and the ``gen_ai_client_*`` metrics."""

    def __init__(self, run: RunTelemetry, *, provider_name: str, model_id: str) -> None:
        self.run = run
        self.provider = provider_name
        self.model_id = model_id
        self._labels = ("chat", self.provider, model_id)
        self._started = 0.0
        self._first = False
        self.span: Span | None = None
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> ChatTelemetry:
        self._started = time.perf_counter()
        if self.run.telemetry.tracer is not None:
            self.span = opened(
                self._stack,
                self.run.telemetry.tracer,
                f"chat {self.model_id}",
                SpanKind.CLIENT,
                self._attributes,
            )
        return self

    def _attributes(self) -> dict[str, Any]:
        return {
            gen_ai.OPERATION: "chat",
            gen_ai.PROVIDER: self.provider,
            gen_ai.REQUEST_MODEL: self.model_id,
            gen_ai.CONVERSATION: self.run.thread_id,
            "gen_ai.request.stream": True,
        }

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, _tb: object) -> None:
        error = None if exc is None or isinstance(exc, asyncio.CancelledError) else gen_ai.error_type(exc)
        metrics = self.run.telemetry.metrics
        if metrics is not None:
            labelled(metrics.operation_duration, *self._labels, error or "").observe(
                time.perf_counter() - self._started
            )
        if self.span is not None and error is not None:
            self.span.set_attribute(gen_ai.ERROR_TYPE, error)
            self.span.set_status(Status(StatusCode.ERROR, error))
        self._stack.close()

    def request(self, messages: Sequence[Message], system: str | None) -> None:
        """What is sent; recorded on the span only with ``IRIS_TRACE_CONTENT``."""
        if self.span is not None and self.run.telemetry.capture_content:
            self.span.set_attribute(gen_ai.INPUT_MESSAGES, gen_ai.input_messages(messages))
            if system:
                self.span.set_attribute(gen_ai.SYSTEM_INSTRUCTIONS, system)

    def first_chunk(self) -> None:
        """The turn's first content arrived (call on every piece; only the first counts)."""
        if self._first:
            return
        self._first = True
        elapsed = time.perf_counter() - self._started
        metrics = self.run.telemetry.metrics
        if metrics is not None:
            labelled(metrics.time_to_first_chunk, *self._labels).observe(elapsed)
        if self.span is not None:
            self.span.set_attribute(gen_ai.TIME_TO_FIRST_CHUNK, elapsed)

    def usage(self, **tokens: int | None) -> None:
        """The vendor's token counts: ``input``, ``output``, ``reasoning``, ``cached``, ``image``."""
        metrics = self.run.telemetry.metrics
        if metrics is not None:
            for kind, count in tokens.items():
                if count is not None:
                    labelled(metrics.token_usage, *self._labels, kind).observe(count)
        if self.span is not None:
            for kind, attribute in _TOKEN_ATTRIBUTES.items():
                if tokens.get(kind) is not None:
                    self.span.set_attribute(attribute, tokens[kind] or 0)

    def finished(
        self,
        reason: str,
        *,
        answer: str = "",
        calls: Sequence[tuple[str, str, str]] = (),
        response_model: str | None = None,
    ) -> None:
        """The turn ended with ``reason``; ``answer`` and ``calls`` are recorded only with content on."""
        if self.span is None:
            return
        self.span.set_attribute(gen_ai.FINISH_REASONS, [reason])
        self.span.set_attribute(gen_ai.RESPONSE_MODEL, response_model or self.model_id)
        if self.run.telemetry.capture_content:
            self.span.set_attribute(gen_ai.OUTPUT_MESSAGES, gen_ai.output_messages(answer, calls, reason))


_TOKEN_ATTRIBUTES = {
    "input": gen_ai.INPUT_TOKENS,
    "output": gen_ai.OUTPUT_TOKENS,
    "reasoning": gen_ai.REASONING_TOKENS,
    "cached": gen_ai.CACHED_TOKENS,
}


class ToolTelemetry:
    """One server tool call: ``execute_tool {tool}`` (kind INTERNAL) and ``iris_tool_calls``."""

    def __init__(self, run: RunTelemetry, name: str, call_id: str, *, label: str) -> None:
        self.run, self.name, self.call_id, self.label = run, name, call_id, label
        self.span: Span | None = None
        self._started = 0.0
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> ToolTelemetry:
        self._started = time.perf_counter()
        if self.run.telemetry.tracer is not None:
            self.span = opened(
                self._stack,
                self.run.telemetry.tracer,
                f"execute_tool {self.label}",
                SpanKind.INTERNAL,
                self._attributes,
            )
        return self

    def _attributes(self) -> dict[str, Any]:
        return {
            gen_ai.OPERATION: "execute_tool",
            gen_ai.TOOL_NAME: self.name,
            gen_ai.TOOL_CALL_ID: self.call_id,
            gen_ai.TOOL_TYPE: "function",
        }

    def __exit__(self, *exc_info: object) -> None:
        metrics = self.run.telemetry.metrics
        if metrics is not None:
            labelled(metrics.tool_duration, self.label).observe(time.perf_counter() - self._started)
        self._stack.close()

    def outcome(self, status: str, *, arguments: str, result: str, error: str | None = None) -> None:
        """How the call ended (``succeeded``, ``failed``); arguments and result only with content on."""
        metrics = self.run.telemetry.metrics
        if metrics is not None:
            labelled(metrics.tool_calls, self.label, status).inc()
        if self.span is None:
            return
        self.span.set_attribute("iris.tool.outcome", status)
        if error is not None:
            self.span.set_attribute(gen_ai.ERROR_TYPE, "tool_failed")
            self.span.set_status(Status(StatusCode.ERROR, error))
        if self.run.telemetry.capture_content:
            self.span.set_attribute(gen_ai.TOOL_ARGUMENTS, arguments)
            self.span.set_attribute(gen_ai.TOOL_RESULT, result)
