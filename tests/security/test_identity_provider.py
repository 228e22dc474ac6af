"""Tokens from an identity provider: a real discovery document and JWKS on 127.0.0.1, RS256, ES256 and
EdDSA keys, rotation, the provider down, and every refusal's stable code."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import jwt
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.security.claims import is_admin, parse_claim_rule
from iris.app.settings import Settings, SettingsError
from tests.conftest import JWT_SECRET
from tests.support.identity_provider import IdentityProvider, serve_identity_provider, stop
from tests.support.openapi import ProblemLog

Client = AsyncTestClient[Litestar]
ALGORITHMS = {"rsa": "RS256", "ec": "ES256", "ed": "EdDSA"}


@pytest.fixture
def engine_name() -> str:
    """SQLite only: nothing here touches the database beyond serving a request."""
    return "sqlite"


@pytest.fixture
def provider() -> Iterator[IdentityProvider]:
    idp = IdentityProvider(max_age=300)
    for kid, alg in ALGORITHMS.items():
        idp.add_key(kid, alg)
    with serve_identity_provider(idp) as server:
        idp.server = server  # type: ignore[attr-defined]
        yield idp


def _settings(database_url: str, tmp_path: Path, provider: IdentityProvider, **extra: object) -> Settings:
    return Settings(
        data_dir=str(tmp_path / "data"),
        database_url=database_url,
        jwt_secret=JWT_SECRET,
        auth_issuer=provider.issuer,
        auth_audience=provider.audience,
        auth_jwks_refetch_seconds=0.3,
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture
async def idp_client(database_url: str, tmp_path: Path, provider: IdentityProvider) -> AsyncIterator[Client]:
    app = create_app(_settings(database_url, tmp_path, provider), environ={})
    problems = ProblemLog()
    async with AsyncTestClient(app=app) as client:
        client.event_hooks["response"].append(problems)
        yield client
    assert problems.undocumented() == []


async def _status(client: Client, token: str, path: str = "/api/models") -> tuple[int, str]:
    response = await client.get(path, headers={"Authorization": f"Bearer {token}"})
    return response.status_code, "" if response.status_code == 200 else response.json()["code"]


async def test_rs256_es256_and_eddsa_tokens_are_accepted_with_one_fetch(
    idp_client: Client, provider: IdentityProvider
) -> None:
    for kid in ALGORITHMS:
        for _ in range(3):
            assert await _status(idp_client, provider.token(kid)) == (200, "")
    assert provider.fetches == {"discovery": 1, "jwks": 1}  # cached by max-age: never per request
    own = jwt.encode(
        {"sub": "alice", "aud": "authenticated", "exp": int(time.time()) + 60}, JWT_SECRET, algorithm="HS256"
    )
    assert await _status(idp_client, own) == (200, "")  # Iris's own HS256 tokens keep working


def _hs256_with(secret: bytes, claims: dict[str, object], kid: str) -> str:
    """An HS256 token whose HMAC key is ``secret`` (PyJWT refuses to use a PEM key as one, so by hand)."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing_input = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode()) + "."
    signing_input += b64(json.dumps(claims).encode())
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64(signature)


def _unsigned(claims: dict[str, object], kid: str) -> str:
    return jwt.encode(claims, key="", algorithm="none", headers={"kid": kid})


async def test_each_refusal_is_401_with_its_code(idp_client: Client, provider: IdentityProvider) -> None:
    claims = provider.claims()
    rsa_private = provider.keys["rsa"][1]
    cases = {
        "token_issuer": provider.token("rsa", iss="https://elsewhere.example/"),
        "token_audience": provider.token("ec", aud="someone-else"),
        "token_expired": provider.token("ed", exp=int(time.time()) - 5),
        "token_key_unknown": jwt.encode(claims, rsa_private, algorithm="RS256"),  # no kid
        "token_algorithm": _unsigned(claims, "rsa"),
        "invalid_token": _hs256_with(provider.public_pem("rsa"), claims, "rsa"),
    }
    for code, token in cases.items():
        assert await _status(idp_client, token) == (401, code), code
    cases = {
        "token_issuer": provider.token("rsa", iss=None),  # iss is required once configured
        "token_key_unknown": jwt.encode(claims, rsa_private, algorithm="RS256", headers={"kid": "nope"}),
        "token_algorithm": jwt.encode(claims, rsa_private, algorithm="RS256", headers={"kid": "ec"}),
        "invalid_token": provider.token("rsa", sub="../etc"),
    }
    for code, token in cases.items():
        assert await _status(idp_client, token) == (401, code), code
    forged = provider.token("rsa")[:-8] + "AAAAAAAA"
    assert await _status(idp_client, forged) == (401, "invalid_token")


async def test_rotation_fetches_a_new_kid_once_and_drops_a_removed_one(
    idp_client: Client, provider: IdentityProvider
) -> None:
    provider.max_age = 1
    assert await _status(idp_client, provider.token("rsa")) == (200, "")
    assert provider.fetches["jwks"] == 1
    provider.add_key("rsa-2", "RS256")
    new = provider.token("rsa-2")
    await asyncio.sleep(0.35)  # past the refetch interval since the first fetch
    answers = await asyncio.gather(*(_status(idp_client, new) for _ in range(20)))
    assert set(answers) == {(200, "")}
    assert provider.fetches["jwks"] == 2  # twenty requests with an unknown kid: one fetch between them
    provider.remove_key("rsa")
    await asyncio.sleep(1.2)  # the set's max-age runs out
    assert await _status(idp_client, provider.token("rsa-2")) == (200, "")
    assert provider.fetches["jwks"] == 3
    old = jwt.encode(provider.claims(), provider.keys["rsa-2"][1], algorithm="RS256", headers={"kid": "rsa"})
    assert await _status(idp_client, old) == (401, "token_key_unknown")


async def test_unknown_kids_are_fetched_at_most_every_few_seconds(
    idp_client: Client, provider: IdentityProvider
) -> None:
    assert await _status(idp_client, provider.token("rsa")) == (200, "")
    unknown = jwt.encode(provider.claims(), provider.keys["rsa"][1], algorithm="RS256", headers={"kid": "x"})
    for _ in range(10):
        assert await _status(idp_client, unknown) == (401, "token_key_unknown")
    assert provider.fetches["jwks"] <= 2  # one refetch at most within the 0.3 s interval


async def test_the_provider_down_keeps_cached_keys_working(
    idp_client: Client, provider: IdentityProvider
) -> None:
    provider.max_age = 1
    assert await _status(idp_client, provider.token("ec")) == (200, "")
    stop(provider.server)  # type: ignore[attr-defined]
    await asyncio.sleep(1.2)  # the cache is stale, and the fetch that follows is refused
    assert await _status(idp_client, provider.token("ec")) == (200, "")
    assert await _status(idp_client, provider.token("ed")) == (200, "")
    unknown = jwt.encode(provider.claims(), provider.keys["ec"][1], algorithm="ES256", headers={"kid": "new"})
    assert await _status(idp_client, unknown) == (401, "token_key_unknown")


async def test_roles_come_from_the_admin_claim_and_is_anonymous(
    database_url: str, tmp_path: Path, provider: IdentityProvider
) -> None:
    settings = _settings(database_url, tmp_path, provider, auth_admin_claim="groups contains iris-admins")
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        admin = provider.token("rsa", groups=["staff", "iris-admins"], role="authenticated")
        assert await _status(client, admin, "/api/mcp-servers") == (200, "")
        user = provider.token("rsa", groups=["staff"], role="admin")  # the rule, not `role`, decides
        assert await _status(client, user, "/api/mcp-servers") == (403, "admin_required")
        guest = provider.token("ed", is_anonymous=True)
        response = await client.get("/api/models", headers={"Authorization": f"Bearer {guest}"})
        assert response.status_code == 200


async def test_a_supabase_project_needs_only_its_url(
    database_url: str, tmp_path: Path, provider: IdentityProvider
) -> None:
    settings = Settings(
        data_dir=str(tmp_path / "data"),
        database_url=database_url,
        jwt_secret=JWT_SECRET,
        supabase_url=provider.base,
    )
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        token = provider.token(
            "ec", iss=provider.base + "/auth/v1", aud="authenticated", app_metadata={"provider": "email"}
        )
        assert await _status(client, token) == (200, "")
        assert await _status(client, provider.token("ec", aud="authenticated")) == (401, "token_issuer")
    assert provider.fetches == {"discovery": 0, "jwks": 1}


def test_admin_claim_rules() -> None:
    assert is_admin({"role": "admin"}, parse_claim_rule("role=admin"))
    assert is_admin({"app_metadata": {"role": "admin"}}, parse_claim_rule("app_metadata.role=admin"))
    assert not is_admin({"app_metadata": {"role": "user"}}, parse_claim_rule("app_metadata.role=admin"))
    assert is_admin({"groups": ["a", "iris-admins"]}, parse_claim_rule("groups contains iris-admins"))
    assert is_admin({"scope": "read iris-admins"}, parse_claim_rule("scope contains iris-admins"))
    namespaced = parse_claim_rule("https://example.com/roles contains admin")
    assert is_admin({"https://example.com/roles": ["admin"]}, namespaced)
    assert not is_admin({}, parse_claim_rule("role=admin"))
    assert is_admin({"role": "service_role"}, None)
    assert not is_admin({"role": "authenticated"}, None)
    with pytest.raises(SettingsError, match="IRIS_AUTH_ADMIN_CLAIM"):
        parse_claim_rule("just-a-word")
