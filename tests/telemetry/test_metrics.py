"""``GET /metrics`` after a mix of runs, failures, tools, refusals and quota hits: every family is there
with its labels, counts move by what happened, labels stay low-cardinality, and only admins may read it
(or a listener of its own serves it)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.metrics import Samples, parse, scrape, value
from tests.support.postgres import free_port
from tests.support.runs import of_type, run, run_input, user_message
from tests.support.waits import REQUEST_SECONDS
from tests.telemetry.conftest import with_openai_model

Client = AsyncTestClient[Litestar]


def label_values(samples: Samples, name: str, label: str) -> set[str]:
    return {dict(ls)[label] for (n, ls), _ in samples.items() if n == name and label in dict(ls)}


@pytest.fixture
async def metered(
    settings: Settings, openai: tuple[FakeOpenAI, str], auth: Callable[..., dict[str, str]]
) -> AsyncIterator[Client]:
    limited = msgspec.structs.replace(settings, quota_user_runs_per_minute=2)
    async with with_openai_model(limited, openai, auth) as client:
        yield client


async def test_a_scrape_after_a_mix_of_runs_counts_each_family(
    metered: Client,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
    engine_name: str,
) -> None:
    admin, alice, bob = auth("root", role="admin"), auth("alice"), auth("bob")
    before = await scrape(metered, admin)

    events = await run(metered, alice, run_input(str(uuid.uuid4()), user_message("use tool current_time {}")))
    assert of_type(events, "RUN_FINISHED")
    openai[0].rate_limited()
    events = await run(
        metered, alice, run_input(str(uuid.uuid4()), user_message("hi"), model="openai/gpt-4o")
    )
    assert of_type(events, "RUN_ERROR")[0]["code"] == "provider_rate_limit"
    frontend = run_input(
        str(uuid.uuid4()),
        user_message("use tool pick_color {}"),
        tools=[{"name": "pick_color", "description": "asks the user", "parameters": {"type": "object"}}],
    )
    assert of_type(await run(metered, bob, frontend), "RUN_FINISHED")
    bad = await metered.post("/agent/runs", json={"threadId": "t"}, headers=alice)
    assert bad.status_code == 422
    await run(metered, bob, run_input(str(uuid.uuid4()), user_message("second")))
    refused = await metered.post(
        "/agent/runs", json=run_input(str(uuid.uuid4()), user_message("3rd")), headers=bob
    )
    assert refused.status_code == 429

    after = await scrape(metered, admin)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    vision, gpt = {"model": "local/vision"}, {"model": "openai/gpt-4o"}
    assert delta("iris_runs_started_total", **vision) == 3
    assert delta("iris_runs_started_total", **gpt) == 1
    assert delta("iris_runs_finished_total", **vision, outcome="success") == 3
    assert delta("iris_runs_failed_total", **gpt, code="provider_rate_limit") == 1
    assert delta("iris_run_duration_seconds_count", **vision) == 3
    assert value(after, "iris_active_runs") == 0
    assert value(after, "iris_active_streams") == 0

    local = {
        "gen_ai_provider_name": "local",
        "gen_ai_request_model": "vision",
        "gen_ai_operation_name": "chat",
    }
    assert delta("gen_ai_client_operation_duration_seconds_count", **local, error_type="") == 4  # 2 + 1 + 1
    assert (
        delta(
            "gen_ai_client_operation_duration_seconds_count",
            gen_ai_provider_name="openai",
            gen_ai_request_model="gpt-4o",
            error_type="provider_rate_limit",
        )
        == 1
    )
    assert delta("gen_ai_client_operation_time_to_first_chunk_seconds_count", **local) == 4
    for kind in ("input", "output"):
        assert delta("gen_ai_client_token_usage_count", **local, gen_ai_token_type=kind) == 4
        assert delta("gen_ai_client_token_usage_sum", **local, gen_ai_token_type=kind) > 0

    assert delta("iris_tool_calls_total", tool="current_time", outcome="succeeded") == 1
    assert delta("iris_tool_calls_total", tool="client", outcome="pending") == 1
    assert delta("iris_tool_call_duration_seconds_count", tool="current_time") == 1
    assert "pick_color" not in label_values(after, "iris_tool_calls_total", "tool")  # a client's name

    assert delta("iris_quota_refusals_total", limit="runs_per_minute") == 1
    assert delta("iris_problems_total", status="429", code="quota_exceeded") == 1
    assert delta("iris_problems_total", status="422") >= 1

    assert "/agent/runs" in label_values(after, "iris_http_requests_total", "path")
    assert delta("iris_http_requests_total", path="/agent/runs", method="POST", status_code="200") == 4
    assert delta("iris_http_request_duration_seconds_count", path="/agent/runs") == 6
    if engine_name == "sqlite":  # PostgreSQL writers do not queue in Iris
        assert delta("iris_db_write_wait_seconds_count") > 0

    # No label carries a user, thread or run id.
    every_label = " ".join(v for _, labels in after for _, v in labels)
    assert "alice" not in every_label
    assert "bob" not in every_label
    assert frontend["threadId"] not in every_label
    assert frontend["runId"] not in every_label


async def test_retries_fallbacks_and_cooldowns_are_counted_through_the_hooks(
    metered: Client, auth: Callable[..., dict[str, str]]
) -> None:
    telemetry = metered.app.state.telemetry
    admin = auth("root", role="admin")
    before = await scrape(metered, admin)
    telemetry.record_retry("openai/gpt-4o", "provider_rate_limit")
    telemetry.record_fallback("openai/gpt-4o", "local/vision", "provider_unavailable")
    telemetry.record_cooldown("openai/gpt-4o")
    after = await scrape(metered, admin)
    for name, labels in (
        ("iris_model_retries_total", {"model": "openai/gpt-4o", "code": "provider_rate_limit"}),
        ("iris_model_fallbacks_total", {"from_model": "openai/gpt-4o", "to_model": "local/vision"}),
        ("iris_model_cooldowns_total", {"model": "openai/gpt-4o"}),
    ):
        assert value(after, name, **labels) - value(before, name, **labels) == 1, name


async def test_only_admins_read_metrics(metered: Client, auth: Callable[..., dict[str, str]]) -> None:
    assert (await metered.get("/metrics")).status_code == 401
    refused = await metered.get("/metrics", headers=auth("alice"))
    assert refused.status_code == 403
    assert refused.json()["code"] == "admin_required"


async def test_metrics_can_be_switched_off(settings: Settings, auth: Callable[..., dict[str, str]]) -> None:
    app = create_app(msgspec.structs.replace(settings, metrics=False), environ={})
    async with AsyncTestClient(app=app) as client:
        assert (await client.get("/metrics", headers=auth("root", role="admin"))).status_code == 404
        assert app.state.telemetry.metrics is None


@pytest.mark.parametrize("engine_name", ["sqlite"])
def test_a_listener_of_its_own_serves_metrics_without_a_token(
    settings: Settings, auth: Callable[..., dict[str, str]]
) -> None:
    address = f"127.0.0.1:{free_port()}"
    app = create_app(msgspec.structs.replace(settings, metrics_address=address), environ={})
    with serve_asgi(app, lifespan="on") as base:
        main_port = httpx.get(f"{base}/metrics", headers=auth("root", role="admin"), timeout=REQUEST_SECONDS)
        assert main_port.status_code == 404
        httpx.post(f"{base}/api/auth/guest", timeout=REQUEST_SECONDS)
        served = httpx.get(f"http://{address}/metrics", timeout=REQUEST_SECONDS)
        assert served.status_code == 200
        samples = parse(served.text)
        assert value(samples, "iris_http_requests_total", path="/api/auth/guest") >= 1
        assert httpx.get(f"http://{address}/other", timeout=REQUEST_SECONDS).status_code == 404
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://{address}/metrics", timeout=REQUEST_SECONDS)  # stopped with the app
