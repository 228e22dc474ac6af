"""One process may build any number of apps: advanced-alchemy's key registry never limits it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from iris.app.persistence.db import create_alchemy_config
from iris.app.settings import Settings

APPS = 1_200
"""More configs than Python's default recursion limit (1,000) would allow with repeated keys."""


def test_more_configs_than_the_recursion_limit_can_be_built(tmp_path: Path) -> None:
    settings = Settings(data_dir=str(tmp_path))
    configs = [create_alchemy_config(settings) for _ in range(APPS)]
    keys = {config.engine_app_state_key for config in configs}
    assert len(keys) == APPS  # each app's state keys are its own

    async def dispose() -> None:
        for config in configs:
            await config.get_engine().dispose()

    asyncio.run(dispose())
