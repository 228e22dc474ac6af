"""Bearer tokens: missing, malformed, expired, forged, wrong audience; guests; admins."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

import jwt
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.errors import Unauthorized
from iris.app.security.auth import decode_token, issue_token
from tests.conftest import JWT_SECRET

Client = AsyncTestClient[Litestar]


def _claims(**overrides: object) -> dict[str, object]:
    now = int(dt.datetime.now(dt.UTC).timestamp())
    claims: dict[str, object] = {"sub": "alice", "aud": "authenticated", "iat": now, "exp": now + 600}
    claims.update(overrides)
    return claims


async def _models_status(client: Client, headers: dict[str, str]) -> tuple[int, str]:
    response = await client.get("/api/models", headers=headers)
    assert response.headers["content-type"].startswith(
        "application/json" if response.status_code == 200 else "application/problem+json"
    )
    return response.status_code, response.json().get("code", "")


def _bearer(secret: str, **claims: object) -> Callable[[], dict[str, str]]:
    """Headers minted when the test runs, not when pytest collects it: on a busy machine the suite can
    outlast a token minted at collection."""
    return lambda: {"Authorization": "Bearer " + jwt.encode(_claims(**claims), secret, algorithm="HS256")}


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        (dict, "missing_token"),
        (lambda: {"Authorization": "Basic YWxpY2U6cHc="}, "missing_token"),
        (lambda: {"Authorization": "Bearer "}, "missing_token"),
        (lambda: {"Authorization": "Bearer not.a.jwt"}, "invalid_token"),
        (_bearer("another-secret-of-plenty-length-0123456789"), "invalid_token"),
        (_bearer(JWT_SECRET, exp=1), "token_expired"),
        (_bearer(JWT_SECRET, aud="other"), "token_audience"),
        (_bearer(JWT_SECRET, sub="../etc"), "invalid_token"),
        (lambda: {"Authorization": "Bearer " + jwt.encode({"sub": "alice"}, JWT_SECRET)}, "invalid_token"),
    ],
    ids=["none", "basic", "empty", "garbage", "wrong-secret", "expired", "wrong-aud", "bad-sub", "no-exp"],
)
async def test_bad_tokens_are_401(client: Client, headers: Callable[[], dict[str, str]], code: str) -> None:
    response = await client.get("/api/models", headers=headers())
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["code"] == code


def test_alg_none_is_refused() -> None:
    token = jwt.encode(_claims(), key="", algorithm="none")  # "" is the none algorithm's only key
    with pytest.raises(Unauthorized):
        decode_token(JWT_SECRET, token, audience="authenticated")


def test_supabase_style_claims_map_to_roles() -> None:
    user = decode_token(
        JWT_SECRET, jwt.encode(_claims(role="authenticated"), JWT_SECRET), audience="authenticated"
    )
    assert (user.user_id, user.role) == ("alice", "user")
    service = decode_token(
        JWT_SECRET, jwt.encode(_claims(role="service_role"), JWT_SECRET), audience="authenticated"
    )
    assert service.is_admin
    anon = decode_token(
        JWT_SECRET, jwt.encode(_claims(is_anonymous=True), JWT_SECRET), audience="authenticated"
    )
    assert anon.is_guest


def test_a_remembered_token_is_refused_once_it_expires() -> None:
    expires = int(time.time()) + 1
    token = jwt.encode(_claims(exp=expires), JWT_SECRET)
    first = decode_token(JWT_SECRET, token, audience="authenticated")
    assert decode_token(JWT_SECRET, token, audience="authenticated") == first  # remembered: same answer
    time.sleep(max(0.0, expires - time.time()) + 0.05)
    with pytest.raises(Unauthorized) as caught:
        decode_token(JWT_SECRET, token, audience="authenticated")
    assert caught.value.code == "token_expired"


def test_a_remembered_token_is_checked_against_the_secret_and_audience_it_was_verified_with() -> None:
    token = jwt.encode(_claims(), JWT_SECRET)
    decode_token(JWT_SECRET, token, audience="authenticated")
    with pytest.raises(Unauthorized):
        decode_token("another-secret-" + "x" * 32, token, audience="authenticated")
    with pytest.raises(Unauthorized):
        decode_token(JWT_SECRET, token, audience="someone-else")


def test_issue_token_refuses_unsafe_user_ids() -> None:
    with pytest.raises(ValueError, match="user id"):
        issue_token(JWT_SECRET, "a/b")


async def test_valid_token_is_accepted(client: Client, auth: Callable[..., dict[str, str]]) -> None:
    assert (await _models_status(client, auth("alice")))[0] == 200


async def test_guest_token_is_short_lived_and_works(client: Client) -> None:
    response = await client.post("/api/auth/guest")
    assert response.status_code == 201
    body = response.json()
    assert body["tokenType"] == "bearer"
    assert body["userId"].startswith("guest-")
    claims = jwt.decode(body["accessToken"], JWT_SECRET, algorithms=["HS256"], audience="authenticated")
    assert claims["is_anonymous"] is True
    assert claims["sub"] == body["userId"]
    assert claims["exp"] - claims["iat"] == body["expiresIn"] == 3600
    listed = await client.get("/api/models", headers={"Authorization": f"Bearer {body['accessToken']}"})
    assert listed.status_code == 200
    # two guests are two different users
    again = (await client.post("/api/auth/guest")).json()
    assert again["userId"] != body["userId"]


async def test_guest_cannot_administer(client: Client) -> None:
    token = (await client.post("/api/auth/guest")).json()["accessToken"]
    response = await client.post(
        "/api/models",
        json={"name": "x", "provider": "openai", "modelId": "x", "type": "text"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 403
    assert response.json()["code"] == "admin_required"


async def test_the_token_may_come_as_x_api_key(client: Client) -> None:
    """Anthropic's clients send their key as ``x-api-key``: the same token, checked the same way; a
    malformed ``Authorization`` beside it is still refused."""
    token = jwt.encode(_claims(), JWT_SECRET, algorithm="HS256")
    assert (await client.get("/api/models", headers={"x-api-key": token})).status_code == 200
    assert await _models_status(client, {"x-api-key": "not.a.jwt"}) == (401, "invalid_token")
    both = {"x-api-key": token, "Authorization": "Basic YWxpY2U6cHc="}
    assert await _models_status(client, both) == (401, "missing_token")
