"""The real entry points: `alembic upgrade head`, `python -m iris serve` and `python -m iris token`.

This is what `just run` does, end to end, on a fresh data directory with no configuration.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from iris.app.persistence.migrations import REPO_ROOT, head_revisions
from tests.support.databases import PostgresDatabases
from tests.support.images import image_bytes
from tests.support.iris_process import iris_process
from tests.support.postgres import free_port
from tests.support.waits import REQUEST_SECONDS, SUBPROCESS_SECONDS, until

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    data = tmp_path_factory.mktemp("serve") / "data"
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "IRIS_DATA_DIR": str(data),
        "IRIS_PORT": str(port),  # and no IRIS_PUBLIC_URL: it follows the port
    }
    subprocess.run(
        [str(BIN / "alembic"), "upgrade", "head"],
        cwd=REPO_ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=SUBPROCESS_SECONDS,
    )
    with iris_process(env, port, data.parent / "iris.log") as running:
        yield running.base_url, {**env, "log": str(running.log)}


def test_serves_health_and_readiness(server: tuple[str, dict[str, str]]) -> None:
    base, _ = server
    assert httpx.get(f"{base}/healthz", timeout=REQUEST_SECONDS).json() == {"status": "ok"}
    assert httpx.get(f"{base}/readyz", timeout=REQUEST_SECONDS).json()["status"] == "ready"


def test_openapi_lists_every_route(server: tuple[str, dict[str, str]]) -> None:
    base, _ = server
    spec = httpx.get(f"{base}/schema/openapi.json", timeout=REQUEST_SECONDS).json()
    assert set(spec["paths"]) >= {
        "/healthz",
        "/readyz",
        "/api/auth/guest",
        "/api/models",
        "/api/models/{modelId}",
        "/api/agents/{slug}/models",
        "/api/files",
        "/api/file/upload",
        "/storage/v1/object/sign/{bucket}/{objectPath}",
    }
    assert spec["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"


def _cli_token(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m iris token ARGS`` as `just token` runs it."""
    command = [sys.executable, "-m", "iris", "token", *args]
    settings = {k: v for k, v in env.items() if k != "log"}
    return subprocess.run(
        command,
        cwd=REPO_ROOT,
        env=settings,
        capture_output=True,
        text=True,
        check=False,
        timeout=SUBPROCESS_SECONDS,
    )


def test_cli_token_is_accepted_by_the_server(server: tuple[str, dict[str, str]]) -> None:
    base, env = server
    token = _cli_token(env, "alice").stdout.strip().splitlines()[-1]
    admin = _cli_token(env, "root", "admin").stdout.strip().splitlines()[-1]
    response = httpx.get(
        f"{base}/api/models", headers={"Authorization": f"Bearer {token}"}, timeout=REQUEST_SECONDS
    )
    assert response.status_code == 200
    assert {(m["ref"], m["type"]) for m in response.json()["models"]} == {
        ("local/vision", "vision"),
        ("local/multimodal", "multimodal"),
        ("local/text", "text"),
    }
    model = {"name": "x", "provider": "openai", "modelId": "x", "type": "text"}
    forbidden = httpx.post(
        f"{base}/api/models",
        json=model,
        headers={"Authorization": f"Bearer {token}"},
        timeout=REQUEST_SECONDS,
    )
    assert forbidden.status_code == 403
    allowed = httpx.post(
        f"{base}/api/models",
        json=model,
        headers={"Authorization": f"Bearer {admin}"},
        timeout=REQUEST_SECONDS,
    )
    assert allowed.status_code == 201


def test_token_rejects_unsafe_user(server: tuple[str, dict[str, str]]) -> None:
    _, env = server
    done = _cli_token(env, "../x")
    assert done.returncode != 0
    assert "user id" in done.stderr


def test_start_up_says_where_everything_is(server: tuple[str, dict[str, str]]) -> None:
    base, env = server
    printed = Path(env["log"]).read_text()
    assert f"Chat page: {base}/ " in printed
    assert f"API docs: {base}/schema/swagger   OpenAPI: {base}/schema/openapi.json" in printed
    token = printed.split("Dev token for user 'dev' (30 days):\n", 1)[1].splitlines()[0]
    assert (
        httpx.get(
            f"{base}/api/models", headers={"Authorization": f"Bearer {token}"}, timeout=REQUEST_SECONDS
        ).status_code
        == 200
    )


def test_image_urls_follow_the_port(server: tuple[str, dict[str, str]]) -> None:
    """No IRIS_PUBLIC_URL: a signed URL names the port Iris listens on, and that URL serves the image."""
    base, env = server
    token = _cli_token(env, "alice").stdout.strip().splitlines()[-1]
    uploaded = httpx.post(
        f"{base}/api/files",
        headers={"Authorization": f"Bearer {token}"},
        data={"threadId": str(uuid.uuid4())},
        files={"file": ("red.png", image_bytes("PNG", (8, 8)), "image/png")},
        timeout=REQUEST_SECONDS,
    )
    assert uploaded.status_code == 201, uploaded.text
    url = uploaded.json()["url"]
    assert url.startswith(f"{base}/storage/v1/object/sign/")
    assert httpx.get(url, timeout=REQUEST_SECONDS).content == image_bytes("PNG", (8, 8))


def test_a_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {
            "PATH": os.environ.get("PATH", ""),
            "IRIS_DATA_DIR": str(tmp_path / "data"),
            "IRIS_PORT": str(port),
        }
        done = subprocess.run(
            [sys.executable, "-m", "iris", "serve"],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=SUBPROCESS_SECONDS,
        )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"iris: cannot listen on 127.0.0.1:{port}: the port is already in use (set IRIS_HOST / IRIS_PORT)"
    ]


def test_serve_on_a_fresh_data_dir_migrates_sqlite_itself_and_says_so(tmp_path: Path) -> None:
    """What a new user does: `python -m iris serve` with no `just migrate` first."""
    data, port = tmp_path / "data", free_port()
    with iris_process({"IRIS_DATA_DIR": str(data)}, port, tmp_path / "iris.log") as running:
        said = running.output()
        (head,) = head_revisions()
        assert f"Migrated the SQLite database from an empty database to {head}" in said
        guest = httpx.post(f"{running.base_url}/api/auth/guest", timeout=REQUEST_SECONDS)
        assert guest.status_code == 201, guest.text
        token = guest.json()["accessToken"]
        models = httpx.get(
            f"{running.base_url}/api/agents/default/models",
            headers={"Authorization": f"Bearer {token}"},
            timeout=REQUEST_SECONDS,
        )
        assert models.status_code == 200, models.text
        assert httpx.get(f"{running.base_url}/readyz", timeout=REQUEST_SECONDS).status_code == 200
    with iris_process({"IRIS_DATA_DIR": str(data)}, port, tmp_path / "again.log") as again:
        assert "Migrated" not in again.output(), "at head already: nothing to say"


def test_serve_on_unmigrated_postgresql_is_503_until_alembic_then_serves_without_restart(
    postgres: PostgresDatabases, tmp_path: Path
) -> None:
    name = postgres.create()
    try:
        env = {"IRIS_DATA_DIR": str(tmp_path / "data"), "IRIS_DATABASE_URL": postgres.url_for(name)}
        with iris_process(env, free_port(), tmp_path / "iris.log") as running:
            assert "Migrated" not in running.output(), "a shared PostgreSQL is migrated deliberately"
            for method, path in [("POST", "/api/auth/guest"), ("GET", "/api/agents/default/models")]:
                answer = httpx.request(method, f"{running.base_url}{path}", timeout=REQUEST_SECONDS)
                assert answer.status_code == 503, answer.text
                assert answer.json()["code"] == "migrations_pending"
                assert answer.json()["extra"]["hint"] == "alembic upgrade head"
            assert httpx.get(f"{running.base_url}/readyz", timeout=REQUEST_SECONDS).status_code == 503

            subprocess.run(
                [str(BIN / "alembic"), "upgrade", "head"],
                cwd=REPO_ROOT,
                env={"PATH": os.environ.get("PATH", ""), **env},
                check=True,
                capture_output=True,
                timeout=SUBPROCESS_SECONDS,
            )

            def guest() -> httpx.Response | None:
                answer = httpx.post(f"{running.base_url}/api/auth/guest", timeout=REQUEST_SECONDS)
                return answer if answer.status_code == 201 else None

            token = until(guest, within=REQUEST_SECONDS, what="served after alembic").json()["accessToken"]
            models = httpx.get(
                f"{running.base_url}/api/agents/default/models",
                headers={"Authorization": f"Bearer {token}"},
                timeout=REQUEST_SECONDS,
            )
            assert models.status_code == 200, models.text
            assert models.json()["models"], "the catalogue was seeded once the schema was at head"
            assert "internal_error" not in running.output()
    finally:
        postgres.drop(name)
