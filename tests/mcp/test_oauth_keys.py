"""The key users' MCP tokens are sealed with (ADR 0086): a Fernet key as given, a passphrase stretched,
the JWT secret when unset; a string sealed with another key opens to nothing; a short key stops start-up."""

from __future__ import annotations

import msgspec
import pytest
from cryptography.fernet import Fernet

from iris.app.asgi import create_app
from iris.app.mcp.oauth.keys import TokenCipher
from iris.app.settings import Settings, SettingsError

GRANT = {"tokens": {"access_token": "at_secret", "refresh_token": "rt_secret"}}


def test_a_fernet_key_is_used_as_is() -> None:
    key = Fernet.generate_key().decode()
    sealed = TokenCipher.from_settings(key, None).seal(GRANT)
    assert "at_secret" not in sealed
    assert Fernet(key.encode()).decrypt(sealed.encode())  # the very key, not one derived from it
    assert TokenCipher.from_settings(key, "other").open(sealed) == GRANT


def test_unset_the_key_comes_from_the_jwt_secret_and_another_opens_nothing() -> None:
    sealed = TokenCipher.from_settings(None, "jwt-secret-one").seal(GRANT)
    assert TokenCipher.from_settings(None, "jwt-secret-one").open(sealed) == GRANT
    assert TokenCipher.from_settings(None, "jwt-secret-two").open(sealed) is None
    assert TokenCipher.from_settings("p" * 32, "jwt-secret-one").open(sealed) is None
    assert TokenCipher.from_settings(None, "jwt-secret-one").open("not sealed") is None


def test_a_passphrase_is_stretched_and_a_short_one_is_refused() -> None:
    phrase = "correct horse battery staple and more"
    sealed = TokenCipher.from_settings(phrase, None).seal(GRANT)
    assert TokenCipher.from_settings(phrase, None).open(sealed) == GRANT
    with pytest.raises(ValueError, match="at least 32"):
        TokenCipher.from_settings("short", "jwt")
    with pytest.raises(ValueError, match="no key"):
        TokenCipher.from_settings(None, None)


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
def test_a_short_key_stops_the_app_at_start(settings: Settings) -> None:
    with pytest.raises(SettingsError, match="IRIS_MCP_TOKEN_KEY"):
        create_app(msgspec.structs.replace(settings, mcp_token_key="short"), environ={})
