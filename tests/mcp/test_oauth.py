"""Per-user authorization at an OAuth-protected remote MCP server, end to end against the test server and
its authorization server (the MCP SDK's auth pieces, on loopback): a call the user is not signed in for
ends the run with an ``authorization_required`` interrupt carrying the authorization URL (PKCE, ``state``,
RFC 8707 ``resource``); the browser-free sign-in reaches Iris's callback, the code is exchanged, and the
resumed run gets the call's result with the user's own identity. A second user signs in separately;
connections are listed and revoked; tokens never appear in the clear in the database file, the logs or
the spans. Refresh, an invalid refresh token, step-up, client credentials and bad callbacks follow."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.oauth_flow import (
    approve,
    authorization_url,
    called,
    interrupted,
    oauth_server,
    register,
    resumed,
    sign_in,
    signs_in,
    text_of,
)
from tests.support.runs import of_type, run, run_input, user_message

pytestmark = pytest.mark.slow
SQLITE = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
BOTH_ENGINES = pytest.mark.parametrize("engine_name", ["sqlite", "postgresql"], indirect=True)
Client = AsyncTestClient[Litestar]
SHORT_TTL = 2


@pytest.fixture
def server_env() -> dict[str, str]:
    return {}


@pytest.fixture
def secure_url(marks: Path, server_env: dict[str, str]) -> Iterator[str]:
    with oauth_server(marks, **server_env) as url:
        yield url


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def client(settings: Settings, exporter: InMemorySpanExporter) -> AsyncIterator[Client]:
    app = create_app(settings, environ={"SVC_SECRET": "s3cret"}, span_exporter=exporter)
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


@SQLITE
async def test_sign_in_resume_second_user_list_and_revoke(
    client: Client,
    admin: dict[str, str],
    auth: Callable[..., dict[str, str]],
    secure_url: str,
    marks: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    exporter: InMemorySpanExporter,
) -> None:
    caplog.set_level(logging.DEBUG)
    alice, bob = auth("alice"), auth("bob")
    await register(client, admin, secure_url)

    # Nobody has listed the server's tools yet: the run offers secure__sign_in.
    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, alice, thread, "secure__sign_in")
    query = parse_qs(urlsplit(authorization_url(interrupt)).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["response_type"] == ["code"]
    assert query["resource"] == [secure_url]
    assert query["state"][0]
    assert query["code_challenge"][0]
    assert "mcp:read" in query["scope"][0]
    page = await sign_in(client, interrupt, "alice")
    assert page.status_code == 200, page.text
    assert "Signed in to secure" in page.text
    output = await resumed(client, alice, thread, interrupt)
    assert output["status"] == "succeeded", output
    assert "secure__whoami" in text_of(output)
    assert "user=alice" in text_of(await called(client, alice, "secure__whoami"))

    # Bob: the tools are known now; his call itself asks him to sign in, then proceeds as him.
    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, bob, thread, "secure__whoami")
    assert (await sign_in(client, interrupt, "bob")).status_code == 200
    output = await resumed(client, bob, thread, interrupt)
    assert output["status"] == "succeeded", output
    assert "user=bob" in text_of(output)
    assert "user=alice" in text_of(await called(client, alice, "secure__whoami"))

    listed = await client.get("/api/mcp/connections", headers=alice)
    assert listed.status_code == 200, listed.text
    (connection,) = listed.json()["connections"]
    assert connection["server"] == "secure"
    assert "mcp:read" in connection["scopes"]
    assert connection["expiresAt"]
    assert not any("token" in key.lower() for key in connection)

    revoked = await client.delete("/api/mcp/connections/secure", headers=alice)
    assert revoked.status_code == 204, revoked.text
    assert (marks / "revoked.refresh").read_text() == "alice"
    assert (await client.get("/api/mcp/connections", headers=alice)).json()["connections"] == []
    again = await client.delete("/api/mcp/connections/secure", headers=alice)
    assert (again.status_code, again.json()["code"]) == (404, "mcp_connection_not_found")
    await interrupted(client, alice, str(uuid.uuid4()), "secure__whoami")  # signed out: asked again
    assert "user=bob" in text_of(await called(client, bob, "secure__whoami"))  # bob is still signed in

    no_token_in_clear(marks, tmp_path, caplog, exporter)


def no_token_in_clear(
    marks: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, exporter: InMemorySpanExporter
) -> None:
    """Every token the authorization server issued is absent from the SQLite file (and its write-ahead
    log), from every log record and from every span's attributes and events."""
    database = b"".join(path.read_bytes() for path in sorted(tmp_path.glob("iris.db*")))
    assert b"mcp_grants" in database
    issued = (marks / "issued").read_text().split()
    assert len(issued) >= 4
    logged = "\n".join(record.getMessage() for record in caplog.records)
    spans = exporter.get_finished_spans()
    assert spans
    traced = "\n".join(
        f"{span.name} {dict(span.attributes or {})} {[dict(e.attributes or {}) for e in span.events]}"
        for span in spans
    )
    for token in issued:
        assert token.encode() not in database
        assert token not in logged
        assert token not in traced


@BOTH_ENGINES
async def test_a_wrong_used_or_missing_state_changes_nothing(
    client: Client, admin: dict[str, str], auth: Callable[..., dict[str, str]], secure_url: str
) -> None:
    alice = auth("alice")
    await register(client, admin, secure_url)
    wrong = await client.get("/api/mcp/oauth/callback", params={"state": "forged", "code": "stolen"})
    assert wrong.status_code == 403
    assert wrong.headers["content-type"].startswith("application/problem+json")
    assert wrong.json()["code"] == "oauth_state_invalid"
    assert "stolen" not in wrong.text
    missing = await client.get("/api/mcp/oauth/callback", params={"code": "x"})
    assert missing.status_code == 400  # no state at all: a malformed request

    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, alice, thread, "secure__sign_in")
    back = await approve(authorization_url(interrupt), "alice")
    assert (await client.get(back)).status_code == 200
    replayed = await client.get(back)  # a state is used once
    assert replayed.json()["code"] == "oauth_state_invalid"
    assert (await resumed(client, alice, thread, interrupt))["status"] == "succeeded"
    (connection,) = (await client.get("/api/mcp/connections", headers=alice)).json()["connections"]
    assert connection["server"] == "secure"
    assert (await client.get("/api/mcp/connections", headers=auth("bob"))).json()["connections"] == []


@SQLITE
@pytest.mark.parametrize("server_env", [{"ACCESS_TTL": str(SHORT_TTL)}])
async def test_an_expired_token_is_refreshed_and_a_dead_refresh_token_asks_again(
    client: Client, admin: dict[str, str], auth: Callable[..., dict[str, str]], secure_url: str, marks: Path
) -> None:
    alice = auth("alice")
    await register(client, admin, secure_url)
    await signs_in(client, alice, "alice", "secure__sign_in")

    await asyncio.sleep(SHORT_TTL + 0.5)
    assert "user=alice" in text_of(await called(client, alice, "secure__whoami"))
    assert (marks / "refreshed").read_text() == "alice"  # refreshed, not signed in again

    async with httpx.AsyncClient() as http:
        forgotten = await http.post(secure_url.removesuffix("/mcp") + "/test/forget-refresh")
        assert forgotten.status_code == 200
    await asyncio.sleep(SHORT_TTL + 0.5)
    thread = str(uuid.uuid4())
    interrupt = await asyncio.wait_for(interrupted(client, alice, thread, "secure__whoami"), 60)
    await sign_in(client, interrupt, "alice")
    output = await resumed(client, alice, thread, interrupt)
    assert output["status"] == "succeeded", output
    assert "user=alice" in text_of(output)


@SQLITE
async def test_step_up_asks_again_with_the_wider_scope(
    client: Client, admin: dict[str, str], auth: Callable[..., dict[str, str]], secure_url: str, marks: Path
) -> None:
    alice = auth("alice")
    await register(client, admin, secure_url)
    await signs_in(client, alice, "alice", "secure__sign_in")
    assert "mcp:admin" not in (marks / "authorized.alice").read_text()

    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, alice, thread, "secure__audit_log")  # 403 insufficient_scope
    scope = parse_qs(urlsplit(authorization_url(interrupt)).query)["scope"][0].split()
    assert {"mcp:read", "mcp:admin"} <= set(scope)
    await sign_in(client, interrupt, "alice")
    output = await resumed(client, alice, thread, interrupt)
    assert output["status"] == "succeeded", output
    assert text_of(output) == "audit: all quiet"
    assert "scopes=mcp:admin mcp:read" in text_of(await called(client, alice, "secure__whoami"))


@SQLITE
@pytest.mark.parametrize("server_env", [{"CC_CLIENT_ID": "svc", "CC_CLIENT_SECRET": "s3cret"}])
async def test_client_credentials_one_identity_for_everyone(
    client: Client, admin: dict[str, str], auth: Callable[..., dict[str, str]], secure_url: str, marks: Path
) -> None:
    oauth = {
        "grant": "client_credentials",
        "clientId": "svc",
        "clientSecret": "${SVC_SECRET}",
        "scopes": ["mcp:read"],
        "issuer": secure_url.removesuffix("/mcp"),
    }
    await register(client, admin, secure_url, oauth)
    for user in ("alice", "bob"):
        assert "user=service" in text_of(await called(client, auth(user), "secure__whoami"))
    assert (marks / "cc.issued").read_text() == "mcp:read"
    assert (await client.get("/api/mcp/connections", headers=auth("alice"))).json()["connections"] == []
    plain = {"grant": "client_credentials", "clientId": "svc", "clientSecret": "s3cret"}
    refused = await client.patch("/api/mcp-servers/secure", json={"oauth": plain}, headers=admin)
    assert (refused.status_code, refused.json()["code"]) == (422, "validation_failed")
    assert "s3cret" not in refused.text


@SQLITE
async def test_a_cancelled_sign_in_fails_the_call_and_its_link(
    client: Client, admin: dict[str, str], auth: Callable[..., dict[str, str]], secure_url: str
) -> None:
    alice = auth("alice")
    await register(client, admin, secure_url)
    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, alice, thread, "secure__sign_in")
    events = await run(
        client, alice, run_input(thread, resume=[{"interruptId": interrupt["id"], "status": "cancelled"}])
    )
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    output = result["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "failed"
    assert "cancelled the sign-in" in output["error"]
    back = await approve(authorization_url(interrupt), "alice")
    assert (await client.get(back)).json()["code"] == "oauth_state_invalid"  # the link died with it
    assert (await client.get("/api/mcp/connections", headers=alice)).json()["connections"] == []


async def profile_link(client: Client, user: dict[str, str]) -> str:
    """A call of ``secure__profile`` in a new thread: the path that reads the link it returned."""
    thread = str(uuid.uuid4())
    events = await run(client, user, run_input(thread, user_message("use tool secure__profile {}")))
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    assert result["metadata"]["iris/toolAgentOutput"]["status"] == "succeeded", result
    message = result["messageId"]
    return f"/api/agents/default/sessions/{thread}/messages/{message}/resource-links/1/read"


@SQLITE
async def test_a_resource_link_is_read_with_the_readers_own_sign_in(
    client: Client, admin: dict[str, str], auth: Callable[..., dict[str, str]], secure_url: str
) -> None:
    """Resource links meet per-user authorization: the link is read through the reader's own
    connection (the server answers with their identity); signed out, the read is refused clearly."""
    alice, bob = auth("alice"), auth("bob")
    await register(client, admin, secure_url)
    await signs_in(client, alice, "alice", "secure__sign_in")
    await signs_in(client, bob, "bob", "secure__whoami")
    first, second = await profile_link(client, alice), await profile_link(client, alice)
    read = await client.post(first, headers=alice)
    assert read.status_code == 200, read.text
    assert read.json()["text"] == "profile of alice"

    assert (await client.delete("/api/mcp/connections/secure", headers=alice)).status_code == 204
    refused = await client.post(second, headers=alice)
    assert (refused.status_code, refused.json()["code"]) == (409, "mcp_sign_in_required"), refused.text
    assert "sign in to the MCP server secure" in refused.json()["detail"], refused.text
    assert (await client.post(first, headers=alice)).json()["text"] == "profile of alice"  # kept
