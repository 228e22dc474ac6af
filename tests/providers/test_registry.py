"""Provider discovery: lazy, failure-isolated, allow-listed, through real entry points."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator
from importlib.metadata import EntryPoint
from pathlib import Path

import httpx
import pytest

from iris.app.persistence.migrations import REPO_ROOT
from iris.providers import NoSuchProvider, ProviderContext
from iris.providers.registry import GROUP, ProviderRegistry
from iris.providers.spec import ProviderFactory
from tests.support.waits import SUBPROCESS_SECONDS

EXAMPLE = REPO_ROOT / "examples" / "iris-provider-echo"


def ep(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=GROUP)


@pytest.fixture
async def context() -> AsyncIterator[ProviderContext]:
    async with httpx.AsyncClient() as http:
        yield ProviderContext(environ={}, http=http)


@pytest.fixture(autouse=True)
def _example_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))


async def test_broken_plugins_are_listed_and_the_others_work(context: ProviderContext) -> None:
    registry = ProviderRegistry(
        context,
        entry_points_=[
            ep("echo", "tests.plugins.good:create"),
            ep("missing", "tests.plugins.does_not_exist:create"),
            ep("raises", "tests.plugins.broken:raises"),
            ep("notprovider", "tests.plugins.broken:not_a_provider"),
            ep("oldspec", "tests.plugins.broken:old_spec"),
            ep("liar", "tests.plugins.broken:local_under_another_name"),
        ],
    )
    loaded, failures = registry.load_all()
    assert list(loaded) == ["echo"]
    assert loaded["echo"].id == "echo"
    errors = {f.id: f.error for f in failures}
    assert set(errors) == {"missing", "raises", "notprovider", "oldspec", "liar"}
    assert "ModuleNotFoundError" in errors["missing"]
    assert "cannot reach the licence server" in errors["raises"]
    assert "did not return a Provider" in errors["notprovider"]
    assert "SPI version '0'" in errors["oldspec"]
    assert "calls itself 'local'" in errors["liar"]


async def test_lazy_loading_and_lookup(context: ProviderContext) -> None:
    sys.modules.pop("tests.plugins.good", None)
    registry = ProviderRegistry(
        context,
        entry_points_=[ep("echo", "tests.plugins.good:create"), ep("bad", "tests.plugins.broken:raises")],
    )
    assert registry.ids == ["bad", "echo"]
    assert "tests.plugins.good" not in sys.modules  # nothing imported until asked
    provider = registry.get("echo")
    assert provider.id == "echo"
    assert "tests.plugins.good" in sys.modules
    assert registry.get("echo") is provider  # loaded once
    with pytest.raises(NoSuchProvider) as caught:
        registry.get("bad")
    assert caught.value.available == ["echo"]
    with pytest.raises(NoSuchProvider):
        registry.get("nope")


async def test_allow_list_and_duplicates(context: ProviderContext) -> None:
    registry = ProviderRegistry(
        context,
        entry_points_=[
            ep("echo", "tests.plugins.good:create"),
            ep("echo", "tests.plugins.broken:raises"),
            ep("local", "iris.providers.local:create"),
        ],
        allow={"local"},
    )
    loaded, failures = registry.load_all()
    assert list(loaded) == ["local"]
    assert [f.error for f in failures] == ["duplicate provider id 'echo'; the first one wins"]
    with pytest.raises(NoSuchProvider):
        registry.get("echo")  # installed, but not allowed


async def test_factories_can_be_injected(context: ProviderContext) -> None:
    from iris_provider_echo import EchoProvider

    registry = ProviderRegistry(context, entry_points_=[], factories={"echo": lambda _ctx: EchoProvider()})
    assert registry.get("echo").id == "echo"


def test_builtins_are_registered_through_the_entry_point_group() -> None:
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["entry-points"][GROUP]
    assert set(declared) == {"local", "openai", "anthropic", "gemini", "ollama", "litellm"}


def test_example_plugin_is_discovered_through_its_entry_point(tmp_path: Path) -> None:
    """Install the example the way pip would (a dist-info with its entry points), in a fresh interpreter."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    dist_info = tmp_path / f"iris_provider_echo-{project['version']}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = [f"[{GROUP}]", *(f"{k} = {v}" for k, v in project["entry-points"][GROUP].items())]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    script = """
import asyncio, json, httpx
from iris.providers import Message, ModelSpec, ProviderContext, RequestOptions, TextPart
from iris.providers.registry import ProviderRegistry

async def main():
    async with httpx.AsyncClient() as http:
        registry = ProviderRegistry(ProviderContext(environ={}, http=http))
        loaded, failures = registry.load_all()
        echo = registry.get("echo")
        model = ModelSpec(provider="echo", model_id="e1", type="text")
        hello = [Message(role="user", parts=(TextPart(text="hi there"),))]
        events = [e async for e in echo.stream(hello, model, RequestOptions())]
        print(json.dumps({"loaded": sorted(loaded), "failed": [f.id for f in failures],
                          "said": "".join(getattr(e, "delta", "") for e in events)}))

asyncio.run(main())
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(EXAMPLE), str(REPO_ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=SUBPROCESS_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "echo" in result["loaded"]
    assert "local" in result["loaded"]  # the built-ins come through the very same group
    assert result["said"] == "echo: hi there"


def test_the_example_plugin_passes_its_own_tests() -> None:
    """The example's tests use the conformance suite shipped in ``iris.providers.testing``, as any plugin
    can."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(REPO_ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=SUBPROCESS_SECONDS,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "12 passed" in done.stdout, done.stdout[-1000:]


async def test_ready_loads_every_provider_on_another_thread(context: ProviderContext) -> None:
    """What a server awaits at start-up: the imports and factories run off the event loop's thread,
    a broken plugin among them included, and nothing loads again afterwards."""
    import threading

    from iris_provider_echo import EchoProvider

    threads: list[str] = []

    def echo(_ctx: ProviderContext) -> EchoProvider:
        threads.append(threading.current_thread().name)
        return EchoProvider()

    registry = ProviderRegistry(
        context,
        entry_points_=[ep("bad", "tests.plugins.broken:raises")],
        factories={"echo": echo},
    )
    await registry.ready()
    await registry.ready()  # once is enough; waiting again returns at once
    assert threads == ["iris provider loading"]
    assert threading.current_thread().name not in threads
    loaded, failures = registry.load_all()
    assert list(loaded) == ["echo"]
    assert [f.id for f in failures] == ["bad"]
    assert threads == ["iris provider loading"]


async def test_start_up_loads_only_the_providers_it_names_and_the_others_load_off_the_loop(
    context: ProviderContext,
) -> None:
    """A server loads the enabled models' providers at start-up; another one is loaded by the first
    ``ready`` that names it, on a thread (never the loop's), once, while a loaded one is not loaded again."""
    import threading

    from iris_provider_echo import EchoProvider

    built: list[tuple[str, str]] = []

    def factory(name: str) -> ProviderFactory:
        def build(_ctx: ProviderContext) -> EchoProvider:
            built.append((name, threading.current_thread().name))
            provider = EchoProvider()
            provider.id = name
            return provider

        return build

    registry = ProviderRegistry(context, factories={name: factory(name) for name in ("echo", "other")})
    registry.start_loading(["echo", "not-installed"])
    await registry.ready(["echo"])
    assert built == [("echo", "iris provider loading")]
    await registry.ready(["other", "echo"])
    await asyncio.gather(registry.ready(["other"]), registry.ready(["other"]))
    assert built == [("echo", "iris provider loading"), ("other", "iris provider loading")]
    assert threading.current_thread().name != "iris provider loading"
    assert registry.get("other").id == "other"
    await registry.ready(["not-installed"])  # nothing to load: returns, and get() says why
    with pytest.raises(NoSuchProvider):
        registry.get("not-installed")
    await registry.ready()
    assert len(built) == 2
