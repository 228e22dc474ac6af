"""What a fresh Iris process's memory is: resident memory (``VmRSS``) after each import of what
``python -m iris serve`` loads, in that order (a module shared by two is counted for the first), then each
``iris.providers`` plugin as start-up loads it. Prints one line per step, largest first, and the total;
``bench/runs.py`` prints it beside the RSS of a server that has served thousands of runs.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

STEPS = (
    "uvicorn",
    "litestar",
    "msgspec",
    "sqlalchemy.ext.asyncio",
    "advanced_alchemy",
    "aiosqlite",
    "asyncpg",
    "httpx",
    "PIL.Image",
    "opentelemetry.sdk.trace",
    "iris.app.asgi",
)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    start = rss_mib()
    before, steps = start, []
    for name in STEPS:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        steps.append((name, rss_mib() - before))
        before = rss_mib()
    import httpx

    from iris.app.asgi import build_registry
    from iris.app.settings import load_settings, prepare
    from iris.providers.errors import NoSuchProvider

    with tempfile.TemporaryDirectory(prefix="iris-memory-") as data:
        registry = build_registry(prepare(load_settings({"IRIS_DATA_DIR": data})), {}, httpx.AsyncClient())
        for provider_id in registry.ids:
            try:
                registry.get(provider_id)
            except NoSuchProvider:
                continue
            steps.append((f"provider {provider_id}", rss_mib() - before))
            before = rss_mib()
    steps.sort(key=lambda step: -step[1])
    top = ", ".join(f"{name} {mib:.0f}" for name, mib in steps[:6] if mib >= 1)
    print(f"a fresh process's imports: {before:.0f} MiB resident (the interpreter {start:.0f});")
    print(f"largest (MiB, in import order): {top}")


if __name__ == "__main__":
    main()
