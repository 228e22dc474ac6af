"""The project's JavaScript packages (package.json, installed by ``just js-setup`` with ``npm ci``) for the
tests that run a real JavaScript client or server under Node."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.waits import INSTALL_SECONDS

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "node_modules"


def _installed(package: str) -> bool:
    return (NODE_MODULES / package / "package.json").is_file()


def _install_from_lock() -> None:
    """``npm ci`` from package-lock.json, as ``just js-setup`` does (for a bare ``pytest`` run)."""
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--silent"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"npm ci failed in {ROOT}: {done.stderr[-800:]}")


def npm_install(tmp_path_factory: pytest.TempPathFactory, purpose: str, *packages: str) -> Path:
    """A temp dir whose ``node_modules`` is the project's, holding ``packages`` (names as in package.json).

    Skipped, saying why, only where Node or npm is absent; a package missing from package.json fails.
    """
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip(f"node and npm are not installed: the {purpose} test needs them")
    if not all(_installed(name) for name in packages):
        _install_from_lock()
    missing = [name for name in packages if not _installed(name)]
    if missing:
        pytest.fail(f"{', '.join(missing)} not in package.json: add it there (the {purpose} test needs it)")
    where = tmp_path_factory.mktemp(purpose.replace("@", "").replace("/", "-"))
    (where / "package.json").write_text(
        f'{{"name": "iris-{where.name.lower()}", "private": true, "type": "module"}}'
    )
    (where / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    return where
