"""How Iris is registered as a client at an OAuth-protected MCP server's authorization server, besides
dynamic registration (tested with the rest in ``test_oauth.py``), ADR 0086:

- by Iris's own client ID metadata document: when the authorization server says it takes such
  documents and Iris is public over https, Iris's ``client_id`` is the URL of the document it serves,
  no dynamic registration is made, and the sign-in completes with that client;
- by a client id and secret an admin registered by hand: the secret is read from ``${VAR}`` and sent
  to the token endpoint, never stored, and no dynamic registration is made.

The test's Iris is served in-process, so the authorization server cannot fetch the document itself: the
test fetches it from Iris's route and hands it over as a file, which the server reads as if fetched."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.oauth_flow import authorization_url, interrupted, oauth_server, register, resumed, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)]
Client = AsyncTestClient[Litestar]
PUBLIC = "https://iris.example"
DOCUMENT_URL = f"{PUBLIC}/api/mcp/oauth/client-metadata.json"
SECRET = "by-hand-s3cret"


@pytest.fixture
def secure_url(marks: Path) -> Iterator[str]:
    static = {
        "client_id": "iris-by-hand",
        "client_secret": SECRET,
        "redirect_uris": [f"{PUBLIC}/api/mcp/oauth/callback"],
        "token_endpoint_auth_method": "client_secret_post",
        "grant_types": ["authorization_code", "refresh_token"],
        "scope": "mcp:read mcp:admin",
    }
    env = {"CIMD_DOCUMENT": str(marks / "cimd.json"), "STATIC_CLIENT": json.dumps(static)}
    with oauth_server(marks, **env) as url:
        yield url


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    app = create_app(msgspec.structs.replace(settings, public_url=PUBLIC), environ={"BY_HAND": SECRET})
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


async def test_iris_is_its_own_client_by_its_metadata_document(
    client: Client, auth: Callable[..., dict[str, str]], secure_url: str, marks: Path
) -> None:
    served = await client.get("/api/mcp/oauth/client-metadata.json")
    assert served.status_code == 200, served.text
    document = served.json()
    assert document["client_id"] == DOCUMENT_URL
    assert document["redirect_uris"] == [f"{PUBLIC}/api/mcp/oauth/callback"]
    assert document["token_endpoint_auth_method"] == "none"
    (marks / "cimd.json").write_text(json.dumps(document))

    alice = auth("alice")
    await register(client, auth("root", role="admin"), secure_url)
    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, alice, thread, "secure__sign_in")
    query = parse_qs(urlsplit(authorization_url(interrupt)).query)
    assert query["client_id"] == [DOCUMENT_URL]
    assert query["redirect_uri"] == [f"{PUBLIC}/api/mcp/oauth/callback"]
    assert (await sign_in(client, interrupt, "alice")).status_code == 200
    assert (await resumed(client, alice, thread, interrupt))["status"] == "succeeded"
    assert (marks / "cimd.used").read_text() == DOCUMENT_URL
    assert not (marks / "registered").exists()  # no dynamic registration was made


def database_bytes(tmp_path: Path) -> bytes:
    """The SQLite file and its write-ahead log, as a dump would have them."""
    return b"".join(path.read_bytes() for path in sorted(tmp_path.glob("iris.db*")))


async def test_a_client_the_admin_registered_by_hand(
    client: Client, auth: Callable[..., dict[str, str]], secure_url: str, marks: Path, tmp_path: Path
) -> None:
    alice = auth("alice")
    oauth = {"clientId": "iris-by-hand", "clientSecret": "${BY_HAND}"}
    await register(client, auth("root", role="admin"), secure_url, oauth)
    listed = (await client.get("/api/mcp-servers", headers=auth("root", role="admin"))).text
    assert SECRET not in listed
    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, alice, thread, "secure__sign_in")
    query = parse_qs(urlsplit(authorization_url(interrupt)).query)
    assert query["client_id"] == ["iris-by-hand"]
    assert (await sign_in(client, interrupt, "alice")).status_code == 200
    assert (await resumed(client, alice, thread, interrupt))["status"] == "succeeded"
    assert not (marks / "registered").exists()
    assert not (marks / "cimd.used").exists()  # the admin's client wins over the document
    database = database_bytes(tmp_path)
    assert b"mcp_grants" in database
    assert SECRET.encode() not in database
