"""Traces leave over OTLP/HTTP (protobuf) to a collector on loopback, configured only by the standard
``OTEL_*`` variables, and arrive decodable, with the service name, the run's spans and the headers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings, SettingsError
from iris.app.settings.otel import load_otel_settings
from tests.support.databases import copy_sqlite
from tests.support.fake_collector import FakeCollector
from tests.support.http_server import serve_asgi
from tests.support.runs import of_type, run, run_input, user_message


@pytest.fixture
def collector() -> Iterator[tuple[FakeCollector, str]]:
    fake = FakeCollector()
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.mark.parametrize("compression", ["none", "gzip"])
async def test_a_run_is_exported_to_the_collector(
    tmp_path: Path,
    sqlite_template: Path,
    collector: tuple[FakeCollector, str],
    alice: dict[str, str],
    compression: str,
) -> None:
    fake, base = collector
    otel = load_otel_settings(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": base,
            "OTEL_SERVICE_NAME": "iris-test",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=secret%20one",
            "OTEL_EXPORTER_OTLP_COMPRESSION": compression,
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
        }
    )
    assert otel.tracing
    assert otel.traces_url == f"{base}/v1/traces"
    database = copy_sqlite(sqlite_template, tmp_path / "iris.db")
    settings = Settings(
        data_dir=str(tmp_path / "data"),
        database_url=database,
        jwt_secret="test-secret-for-iris-tests-only-0123456789",
        otel=otel,
    )
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        events = await run(
            client, alice, run_input(str(uuid.uuid4()), user_message("use tool current_time {}"))
        )
    # Leaving the client shut the app down, which flushes the batch exporter.
    (started,) = of_type(events, "RUN_STARTED")
    trace_id = started["metadata"]["iris/traceId"]

    assert fake.exports, "nothing was exported"
    headers, _ = fake.exports[0]
    assert headers["x-api-key"] == "secret one"
    assert headers.get("content-encoding") == (None if compression == "none" else "gzip")
    spans = fake.spans()
    assert {service for service, _ in spans} == {"iris-test"}
    names = {span.name for _, span in spans}  # type: ignore[attr-defined]
    assert {"POST /agent/runs", "invoke_agent default", "chat vision", "execute_tool current_time"} <= names
    agent = next(span for _, span in spans if span.name == "invoke_agent default")  # type: ignore[attr-defined]
    assert agent.trace_id.hex() == trace_id  # type: ignore[attr-defined]
    attributes = {a.key: a.value.string_value for a in agent.attributes}  # type: ignore[attr-defined]
    assert attributes["gen_ai.agent.name"] == "default"
    resource = fake.exports[0][1].resource_spans[0].resource
    assert {a.key: a.value.string_value for a in resource.attributes}["deployment.environment"] == "test"


def test_tracing_is_off_without_the_standard_variables() -> None:
    assert not load_otel_settings({}).tracing
    assert not load_otel_settings({"OTEL_SERVICE_NAME": "iris"}).tracing
    assert load_otel_settings({"OTEL_TRACES_EXPORTER": "console"}).tracing
    assert not load_otel_settings(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}
    ).tracing
    assert not load_otel_settings(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}
    ).tracing
    specific = load_otel_settings(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x"}
    )
    assert specific.traces_url == "http://t/x"
    assert msgspec.structs.asdict(load_otel_settings({}))["sampler"] == "parentbased_always_on"


@pytest.mark.parametrize(
    ("variables", "description"),
    [
        ({}, "ParentBased{root:AlwaysOnSampler"),
        ({"OTEL_TRACES_SAMPLER": "always_off"}, "AlwaysOffSampler"),
        (
            {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
            "TraceIdRatioBased{0.25}",
        ),
    ],
)
def test_the_sampler_follows_otel_traces_sampler(variables: dict[str, str], description: str) -> None:
    from iris.app.telemetry.tracing import sampler

    assert description in sampler(load_otel_settings(variables)).get_description()


@pytest.mark.parametrize(
    ("variables", "complaint"),
    [
        ({"OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER"),
        ({"OTEL_TRACES_SAMPLER_ARG": "2"}, "OTEL_TRACES_SAMPLER_ARG"),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "grpc"),
    ],
)
def test_unusable_otel_variables_stop_start_up(variables: dict[str, str], complaint: str) -> None:
    with pytest.raises(SettingsError, match=complaint):
        load_otel_settings(variables)
