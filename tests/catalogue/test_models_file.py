"""The models file: applied at start-up and by ``python -m iris models sync``, idempotently; models dropped
from it are disabled, not deleted; secrets and unknown options refused as the API refuses them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from litestar.testing import AsyncTestClient

from iris.app.asgi import build_registry, build_tool_directory, create_app
from iris.app.catalogue.defaults import seed_catalogue
from iris.app.catalogue.models_file import ModelsFileError, apply_models_file, load_models_file
from iris.app.persistence.db import create_alchemy_config
from iris.app.persistence.migrations import REPO_ROOT
from iris.app.settings import Settings, SettingsError
from tests.support.waits import SUBPROCESS_SECONDS

Auth = Callable[..., dict[str, str]]

FILE = """
[[models]]
provider = "openai"
modelId = "gpt-4o"
name = "GPT-4o"
type = "vision"
supportsTools = true
guestVisible = true
options = { baseUrl = "http://127.0.0.1:9/v1", detail = "low" }

[[models]]
provider = "openai"
modelId = "gpt-4o-mini"
name = "GPT-4o mini"
type = "text"

[agent]
defaultModel = "openai/gpt-4o"
"""


def _write(tmp_path: Path, text: str, name: str = "models.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


async def _models(client: AsyncTestClient[Any], auth: Auth) -> dict[str, dict[str, Any]]:
    listed = await client.get("/api/models", headers=auth("root", "admin"))
    return {m["ref"]: m for m in listed.json()["models"]}


async def _apply(settings: Settings, path: Path) -> list[str]:
    alchemy = create_alchemy_config(settings)
    async with httpx.AsyncClient() as http:
        try:
            await seed_catalogue(alchemy)  # what start-up does before applying the file
            tools = build_tool_directory()
            return await apply_models_file(
                alchemy, load_models_file(path, build_registry(settings, {}, http), tools), tools
            )
        finally:
            await alchemy.get_engine().dispose()


async def test_applied_at_start_then_again_changes_nothing(
    settings: Settings, tmp_path: Path, auth: Auth
) -> None:
    path = _write(tmp_path, FILE)
    with_file = msgspec.structs.replace(settings, models_file=str(path))
    async with AsyncTestClient(app=create_app(with_file, environ={})) as client:
        models = await _models(client, auth)
        assert models["openai/gpt-4o"]["options"] == {"baseUrl": "http://127.0.0.1:9/v1", "detail": "low"}
        assert (models["openai/gpt-4o"]["name"], models["openai/gpt-4o"]["guestVisible"]) == ("GPT-4o", True)
        assert models["openai/gpt-4o-mini"]["enabled"] is True
        assert {"local/vision", "local/text"} <= set(models)  # the seeded models are left alone
        picker = (await client.get("/api/agents/default/models")).json()
        assert picker["defaultModelId"] == models["openai/gpt-4o"]["id"]
        created = await client.post(
            "/api/models",
            json={"name": "Mine", "provider": "openai", "modelId": "by-api", "type": "text"},
            headers=auth("root", "admin"),
        )
        assert created.status_code == 201

    assert await _apply(settings, path) == []  # a second application changes nothing
    async with AsyncTestClient(app=create_app(with_file, environ={})) as client:  # nor does a restart
        again = await _models(client, auth)
    assert again == {**models, "openai/by-api": again["openai/by-api"]}


async def test_a_model_removed_from_the_file_is_disabled_not_deleted(
    settings: Settings, tmp_path: Path, auth: Auth
) -> None:
    assert await _apply(settings, _write(tmp_path, FILE)) == [
        "added openai/gpt-4o",
        "added openai/gpt-4o-mini",
        "default agent: default model is now openai/gpt-4o",
        "default agent: now offers openai/gpt-4o",  # the short form offers the file's guest-visible models
    ]
    trimmed = FILE.replace('name = "GPT-4o"', 'name = "GPT-4o (2024)"').replace(
        '[[models]]\nprovider = "openai"\nmodelId = "gpt-4o-mini"\nname = "GPT-4o mini"\ntype = "text"\n', ""
    )
    path = _write(tmp_path, trimmed, "trimmed.toml")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
    }

    synced = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "iris", "models", "sync", str(path)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=SUBPROCESS_SECONDS,
    )

    assert synced.returncode == 0, synced.stderr
    assert synced.stdout.splitlines() == [
        "updated openai/gpt-4o: name",
        "disabled openai/gpt-4o-mini (no longer in the file)",
    ]
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        models = await _models(client, auth)
    assert models["openai/gpt-4o-mini"]["enabled"] is False  # still there, with its history
    assert models["openai/gpt-4o"]["name"] == "GPT-4o (2024)"

    again = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "iris", "models", "sync", str(path)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=SUBPROCESS_SECONDS,
    )
    assert again.stdout.strip() == "nothing to change: the catalogue already matches the file"
    # Listed again, it comes back.
    assert await _apply(settings, _write(tmp_path, FILE)) == [
        "updated openai/gpt-4o: name",
        "updated openai/gpt-4o-mini: enabled",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ('{ apiKey = "sk-123" }', "'options.apiKey' looks like a credential"),
        (
            '{ headers = { Authorization = "Bearer x" } }',
            "'options.headers.Authorization' looks like a credential",
        ),
        ('{ base_url = "http://x" }', "take no option 'base_url'; accepted: apiKeyEnv, audio, baseUrl"),
        ("{ detail = 3 }", "'options.detail' must be one of"),
    ],
    ids=["secret", "nested-secret", "unknown", "mistyped"],
)
async def test_bad_options_are_refused_like_the_api_does(
    settings: Settings, tmp_path: Path, options: str, message: str
) -> None:
    path = _write(tmp_path, FILE.replace('{ baseUrl = "http://127.0.0.1:9/v1", detail = "low" }', options))
    with pytest.raises(SettingsError, match="models\\[0\\] \\(openai/gpt-4o\\)") as caught:
        create_app(msgspec.structs.replace(settings, models_file=str(path)), environ={})
    assert message in str(caught.value)
    assert "sk-123" not in str(caught.value)


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_file_problems_name_the_file(settings: Settings, tmp_path: Path) -> None:
    async with httpx.AsyncClient() as http:
        registry = build_registry(settings, {}, http)
        for text, message in [
            ("[[models]]\nprovider = 'openai'\n", r"missing required field .* at .\$\.models\[0\]"),
            ("models = [", r"models.toml: Invalid value"),
            (FILE + FILE.split("[agent]")[0], "listed twice"),
            (FILE + "\n[extra]\n", "unknown field `extra`"),
        ]:
            with pytest.raises(ModelsFileError, match=message):
                load_models_file(_write(tmp_path, text), registry, build_tool_directory())
        with pytest.raises(ModelsFileError, match="No such file"):
            load_models_file(tmp_path / "missing.toml", registry, build_tool_directory())


async def test_the_example_file_applies(settings: Settings) -> None:
    changes = await _apply(settings, REPO_ROOT / "examples" / "models.toml")
    assert changes
    assert all(line.startswith(("added", "default agent")) for line in changes)
    assert await _apply(settings, REPO_ROOT / "examples" / "models.toml") == []


AGENTS = """
[[agents]]
slug = "writer"
name = "Writer"
instructions = "You write."
models = ["openai/gpt-4o", "openai/gpt-4o-mini"]
tools = ["current_time"]
maxToolIterations = 3

[[agents]]
slug = "helper"
name = "Helper"
models = ["local/text"]
guestAccess = true
"""


async def _agents(client: AsyncTestClient[Any], auth: Auth) -> dict[str, dict[str, Any]]:
    listed = await client.get("/api/agents", headers=auth("root", "admin"))
    return {a["slug"]: a for a in listed.json()["agents"]}


async def test_agents_in_the_file_apply_once_the_file_wins_and_removed_ones_are_disabled(
    settings: Settings, tmp_path: Path, auth: Auth
) -> None:
    path = _write(tmp_path, FILE.replace("[agent]", AGENTS + "\n[agent]"))
    added = await _apply(settings, path)
    assert added[-4:] == [
        "added agent writer",
        "added agent helper",
        "default agent: default model is now openai/gpt-4o",
        "default agent: now offers openai/gpt-4o",
    ]
    assert await _apply(settings, path) == []  # applied twice: nothing changes, no new version
    admin = auth("root", "admin")
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        agents = await _agents(client, auth)
        writer = agents["writer"]
        assert (writer["models"], writer["defaultModel"], writer["maxToolIterations"]) == (
            ["openai/gpt-4o", "openai/gpt-4o-mini"],
            "openai/gpt-4o",
            3,
        )
        assert (writer["version"], agents["helper"]["guestAccess"]) == (1, True)
        assert (
            await client.patch("/api/agents/writer", json={"instructions": "Mine."}, headers=admin)
        ).json()["version"] == 2
        mine = {"slug": "mine", "name": "Mine", "models": ["local/vision"]}
        assert (await client.post("/api/agents", json=mine, headers=admin)).status_code == 201

    trimmed = _write(
        tmp_path, FILE.replace("[agent]", AGENTS.split('[[agents]]\nslug = "helper"')[0] + "[agent]")
    )
    assert await _apply(settings, trimmed) == [
        "updated agent writer: instructions (version 3)",  # the file wins over the API's change
        "disabled agent helper (no longer in the file)",
    ]
    assert await _apply(settings, trimmed) == []
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        agents = await _agents(client, auth)
        versions = (await client.get("/api/agents/writer/versions", headers=admin)).json()["versions"]
    assert agents["helper"]["enabled"] is False  # disabled, not deleted
    assert agents["mine"]["version"] == 1  # made through the API: left alone
    assert [v["agent"]["instructions"] for v in versions] == ["You write.", "Mine.", "You write."]


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_agent_problems_name_the_entry(settings: Settings, tmp_path: Path) -> None:
    entry = '[[agents]]\nslug = "writer"\nname = "Writer"\nmodels = ["local/text"]\n'
    async with httpx.AsyncClient() as http:
        registry, tools = build_registry(settings, {}, http), build_tool_directory()
        for text, message in [
            (entry.replace('"writer"', '"Writer"'), r"agents\[0\] \(Writer\): .*\[invalid_agent_slug\]"),
            (
                entry + 'tools = ["nope"]\n',
                r"agents\[0\] \(writer\): There is no tool 'nope'\. \[unknown_tool\]",
            ),
            (entry + entry, r"agents\[1\] \(writer\): listed twice"),
            (entry.replace("writer", "default") + '[agent]\ndefaultModel = "local/text"\n', "keep one"),
        ]:
            with pytest.raises(ModelsFileError, match=message):
                load_models_file(_write(tmp_path, text), registry, tools)
    unknown = _write(tmp_path, entry.replace("local/text", "openai/nope"))
    with pytest.raises(ModelsFileError, match=r"agents\[0\] \(writer\): There is no model 'openai/nope'"):
        await _apply(settings, unknown)
    assert await _apply(settings, _write(tmp_path, entry)) == ["added agent writer"]  # nothing half-applied


async def test_fallbacks_in_the_file_may_name_models_listed_after_them(
    settings: Settings, tmp_path: Path, auth: Auth
) -> None:
    text = FILE.replace(
        'detail = "low" }', 'detail = "low" }\nfallbacks = ["openai/gpt-4o-mini", "local/vision"]'
    )
    text = text.replace('type = "text"\n', 'type = "text"\nretryAttempts = 3\nretryBackoffSeconds = 1.5\n')
    changes = await _apply(settings, _write(tmp_path, text))
    assert "added openai/gpt-4o" in changes
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        models = await _models(client, auth)
    assert models["openai/gpt-4o"]["fallbacks"] == ["openai/gpt-4o-mini", "local/vision"]
    assert (
        models["openai/gpt-4o-mini"]["retryAttempts"],
        models["openai/gpt-4o-mini"]["retryBackoffSeconds"],
    ) == (
        3,
        1.5,
    )
    assert await _apply(settings, _write(tmp_path, text)) == []  # applied again: nothing changes

    missing = FILE.replace('detail = "low" }', 'detail = "low" }\nfallbacks = ["openai/gone"]')
    with pytest.raises(ModelsFileError, match=r"openai/gpt-4o.*fallback_not_found"):
        await _apply(settings, _write(tmp_path, missing))
