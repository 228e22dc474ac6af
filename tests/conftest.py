"""Shared fixtures: every database test runs on SQLite and, where a server exists, PostgreSQL.

PostgreSQL comes from ``IRIS_TEST_DATABASE_URL`` (a superuser URL on the server's ``postgres``
database) or from a throwaway cluster started here when ``initdb``/``pg_ctl`` are on PATH.
Each test gets its own database, copied from a template migrated once per session.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.asgi import create_app
from iris.app.persistence.db import create_engine
from iris.app.security.auth import Role, issue_token
from iris.app.settings import Settings
from tests.support.databases import PostgresDatabases, copy_sqlite, migrate, sqlite_url
from tests.support.fake_supabase import FakeSupabase
from tests.support.http_server import serve_asgi
from tests.support.openapi import ProblemLog
from tests.support.postgres import TemporaryCluster
from tests.support.s3_server import REGION, fresh_bucket, moto_s3, use_credentials_file

JWT_SECRET = "test-secret-for-iris-tests-only-0123456789"
SUPABASE_SERVICE_KEY = "service-role-key-for-tests-0123456789"
SUPABASE_JWT_SECRET = "supabase-project-jwt-secret-for-tests-0123"
ENGINES = ["sqlite", "postgresql"]


def _postgres_source() -> tuple[str | None, str]:
    """(URL or None, how it was found / why it is missing) — decided once per run."""
    configured = os.environ.get("IRIS_TEST_DATABASE_URL")
    if configured:
        return configured, "IRIS_TEST_DATABASE_URL"
    reason = TemporaryCluster.unavailable_reason()
    if reason:
        return None, reason
    return None, "throwaway cluster"


def pytest_report_header() -> str:
    url, how = _postgres_source()
    if url:
        return f"iris databases: sqlite + postgresql ({how})"
    if how == "throwaway cluster":
        return "iris databases: sqlite + postgresql (throwaway cluster started on first use)"
    return f"iris databases: sqlite only — PostgreSQL tests SKIPPED: {how}"


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresDatabases]:
    url, how = _postgres_source()
    if url:
        yield PostgresDatabases(url)
        return
    if how != "throwaway cluster":
        pytest.skip(f"PostgreSQL unavailable: {how}")
    cluster = TemporaryCluster()
    try:
        yield PostgresDatabases(cluster.start())
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "iris.db"
    migrate(sqlite_url(path))
    return path


@pytest.fixture(scope="session")
def postgres_template(postgres: PostgresDatabases) -> Iterator[str]:
    name = postgres.create()
    migrate(postgres.url_for(name))
    yield name
    postgres.drop(name)


@pytest.fixture(params=ENGINES)
def engine_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def database_url(engine_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty database of the parametrised engine, private to this test."""
    if engine_name == "sqlite":
        yield copy_sqlite(request.getfixturevalue("sqlite_template"), tmp_path / "iris.db")
        return
    postgres: PostgresDatabases = request.getfixturevalue("postgres")
    name = postgres.create(template=request.getfixturevalue("postgres_template"))
    yield postgres.url_for(name)
    postgres.drop(name)


@pytest.fixture
def empty_database_url(engine_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with no tables at all (for migration tests)."""
    if engine_name == "sqlite":
        yield sqlite_url(tmp_path / "empty.db")
        return
    postgres: PostgresDatabases = request.getfixturevalue("postgres")
    name = postgres.create()
    yield postgres.url_for(name)
    postgres.drop(name)


@pytest.fixture
async def db_session(database_url: str) -> AsyncIterator[AsyncSession]:
    """A session on the test database (for repository tests)."""
    engine = create_engine(database_url)
    try:
        async with AsyncSession(engine, expire_on_commit=False) as session:
            yield session
    finally:
        await engine.dispose()


@pytest.fixture
def storage_kind() -> str:
    """Which storage backend ``settings`` uses; modules override it to run on both."""
    return "local"


@pytest.fixture
def fake_supabase() -> Iterator[tuple[FakeSupabase, str]]:
    """A fake Supabase Storage on a loopback port: ``(fake, base_url)``."""
    fake = FakeSupabase(SUPABASE_SERVICE_KEY, SUPABASE_JWT_SECRET, buckets=["iris"])
    with serve_asgi(fake.app) as base_url:
        yield fake, base_url


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on a loopback port, for the whole session (each test makes its own bucket)."""
    with moto_s3() as url:
        yield url


@pytest.fixture
def s3_bucket(s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``iris``, new and empty on :func:`s3_endpoint`; the AWS chain finds its keys in a shared
    credentials file."""
    use_credentials_file(monkeypatch, tmp_path)
    return fresh_bucket(s3_endpoint)


@pytest.fixture
def settings(
    database_url: str, tmp_path: Path, storage_kind: str, request: pytest.FixtureRequest
) -> Settings:
    base = Settings(data_dir=str(tmp_path / "data"), database_url=database_url, jwt_secret=JWT_SECRET)
    if storage_kind == "local":
        return base
    if storage_kind == "s3":
        return msgspec.structs.replace(
            base,
            storage="s3",
            storage_bucket=request.getfixturevalue("s3_bucket"),
            s3_endpoint_url=request.getfixturevalue("s3_endpoint"),
            s3_region=REGION,
            s3_addressing_style="path",
        )
    _, supabase_url = request.getfixturevalue("fake_supabase")
    return msgspec.structs.replace(
        base,
        storage="supabase",
        supabase_url=supabase_url,
        supabase_service_key=SUPABASE_SERVICE_KEY,
        supabase_jwt_secret=SUPABASE_JWT_SECRET,
    )


@pytest.fixture
def app(settings: Settings) -> Litestar:
    return create_app(settings, environ={})  # no vendor keys leak in from the machine


@pytest.fixture
async def client(app: Litestar) -> AsyncIterator[AsyncTestClient[Litestar]]:
    """A client of ``app``; afterwards, every problem it was answered must be in the OpenAPI document."""
    problems = ProblemLog()
    async with AsyncTestClient(app=app) as test_client:
        test_client.event_hooks["response"].append(problems)
        yield test_client
    assert problems.undocumented() == [], "answered but not in the OpenAPI document"


@pytest.fixture
def auth() -> Callable[..., dict[str, str]]:
    """``auth("alice")`` → headers with a bearer token for alice (``role="admin"`` for an admin)."""

    def headers(user: str, role: Role = "user") -> dict[str, str]:
        return {"Authorization": f"Bearer {issue_token(JWT_SECRET, user, role=role)}"}

    return headers
