"""npm packages installed into a temp dir for the tests that run a real JavaScript client under Node."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.waits import INSTALL_SECONDS


def npm_install(tmp_path_factory: pytest.TempPathFactory, purpose: str, *packages: str) -> Path:
    """A temp dir with ``packages`` installed; the test is skipped (saying why) without Node or npm, or
    when npm cannot install them."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node and npm are not installed: the {purpose} test needs them")
    where = tmp_path_factory.mktemp(purpose.replace("@", "").replace("/", "-"))
    (where / "package.json").write_text(f'{{"name": "iris-{where.name.lower()}", "private": true}}')
    installed = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", *packages],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
        check=False,
    )
    if installed.returncode != 0:
        pytest.skip(f"npm could not install {' '.join(packages)}: {installed.stderr[-500:]}")
    return where
