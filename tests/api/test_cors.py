"""CORS: off by default; ``IRIS_CORS_ORIGINS`` lets listed origins call the API with a bearer token,
read the headers clients need, and show signed images; a malformed origin stops start-up."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings, SettingsError, load_settings
from tests.support.runs import upload

Client = AsyncTestClient[Litestar]
APP_ORIGIN = "http://localhost:5173"


@pytest.fixture
async def cors_client(tmp_path: Path) -> AsyncIterator[Client]:
    """No migrated database: preflights and health never need it, and every other request is a 503
    ``migrations_pending`` problem (which must carry the grant too)."""
    settings = Settings(
        data_dir=str(tmp_path), jwt_secret="x" * 40, cors_origins=f"{APP_ORIGIN}, https://b.example"
    )
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        yield client


def preflight(method: str, headers: str, origin: str = APP_ORIGIN) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": headers,
    }


async def test_preflight_allows_what_the_api_uses(cors_client: Client) -> None:
    for method in ("GET", "POST", "PATCH", "DELETE"):
        response = await cors_client.options(
            "/api/agents/default/chat",
            headers=preflight(method, "authorization, content-type, last-event-id"),
        )
        assert response.status_code == 204, response.text
        assert response.headers["access-control-allow-origin"] == APP_ORIGIN
        assert method in response.headers["access-control-allow-methods"]
        allowed = response.headers["access-control-allow-headers"].lower()
        assert {"authorization", "content-type", "last-event-id"} <= {h.strip() for h in allowed.split(",")}
        assert "access-control-allow-credentials" not in response.headers


async def test_an_unlisted_origin_gets_no_grant(cors_client: Client) -> None:
    refused = await cors_client.options(
        "/api/models", headers=preflight("GET", "authorization", "http://evil.test")
    )
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers
    simple = await cors_client.get("/healthz", headers={"Origin": "http://evil.test"})
    assert simple.status_code == 200
    assert "access-control-allow-origin" not in simple.headers


async def test_answers_and_problems_carry_the_grant_and_exposed_headers(cors_client: Client) -> None:
    ok = await cors_client.get("/healthz", headers={"Origin": "https://b.example"})
    assert ok.headers["access-control-allow-origin"] == "https://b.example"
    exposed = {h.strip().lower() for h in ok.headers["access-control-expose-headers"].split(",")}
    assert {"location", "retry-after"} <= exposed
    problem = await cors_client.get("/api/models", headers={"Origin": APP_ORIGIN})
    assert (problem.status_code, problem.json()["code"]) == (503, "migrations_pending")
    assert problem.headers["content-type"].startswith("application/problem+json")
    assert problem.headers["access-control-allow-origin"] == APP_ORIGIN  # the page can read the detail


async def test_no_setting_means_same_origin_only(tmp_path: Path) -> None:
    async with AsyncTestClient(app=create_app(Settings(data_dir=str(tmp_path)), environ={})) as client:
        response = await client.get("/healthz", headers={"Origin": APP_ORIGIN})
        assert "access-control-allow-origin" not in response.headers


async def test_star_allows_any_origin_without_credentials(tmp_path: Path) -> None:
    settings = Settings(data_dir=str(tmp_path), cors_origins="*")
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        response = await client.options(
            "/api/models", headers=preflight("GET", "authorization", "http://any.test")
        )
        assert response.status_code == 204
        assert response.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in response.headers


async def test_a_signed_image_loads_from_another_origin(
    settings: Settings, auth: Callable[..., dict[str, str]]
) -> None:
    app = create_app(msgspec.structs.replace(settings, cors_origins=APP_ORIGIN), environ={})
    async with AsyncTestClient(app=app) as client:
        image = await upload(client, auth("alice"), "0190f3c0-0000-7000-8000-000000000001")
        response = await client.get(image["url"].split("8000", 1)[1], headers={"Origin": APP_ORIGIN})
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert response.headers["cross-origin-resource-policy"] == "cross-origin"
    assert response.headers["access-control-allow-origin"] == APP_ORIGIN


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://app.example.com", ["https://app.example.com"]),
        (
            "HTTPS://App.Example.com:443, http://localhost:5173",
            ["https://app.example.com", "http://localhost:5173"],
        ),
        ("http://[::1]:8080", ["http://[::1]:8080"]),
        (" * ", ["*"]),
        ("", []),
    ],
)
def test_origins_are_normalised_as_browsers_send_them(value: str, expected: list[str]) -> None:
    assert load_settings({"IRIS_CORS_ORIGINS": value}).cors_origin_list == expected


@pytest.mark.parametrize(
    "bad",
    [
        "app.example.com",
        "ftp://app.example.com",
        "https://app.example.com/",
        "https://app.example.com/path",
        "https://user@app.example.com",
        "https://app.example.com?x=1",
        "https://app.example.com:99999",
        "https://*.example.com",
        "*, https://app.example.com",
    ],
)
def test_a_malformed_origin_is_a_start_up_error_naming_it(bad: str) -> None:
    with pytest.raises(SettingsError, match="IRIS_CORS_ORIGINS") as raised:
        load_settings({"IRIS_CORS_ORIGINS": f"https://ok.example, {bad}"})
    assert bad.split(", ")[-1] in str(raised.value)  # the message names the value it refuses
