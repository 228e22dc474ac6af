"""The layer rules in pyproject.toml (import-linter) hold, and they cover every module of ``app/``.

A package that is in no layer would be free to import anything, so a new one must be placed first.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from tests.support.waits import SUBPROCESS_SECONDS

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _contracts() -> list[dict[str, Any]]:
    contracts: list[dict[str, Any]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
        "importlinter"
    ]["contracts"]
    return contracts


def _names(layers: list[str]) -> set[str]:
    return {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}


def _layer_modules() -> set[str]:
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers" and "containers" not in c]
    return _names(layers)


def _app_top_level() -> set[str]:
    return {
        f"app.{path.stem if path.is_file() else path.name}"
        for path in (ROOT / "app").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }


def test_every_module_of_app_is_in_a_layer() -> None:
    assert _app_top_level() - _layer_modules() == set(), "place these in a layer in pyproject.toml"


def test_app_root_holds_at_most_eight_modules() -> None:
    assert len(list((ROOT / "app").glob("*.py"))) <= 8


def test_no_package_imports_a_layer_above_it_and_providers_never_imports_app() -> None:
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 kept, 0 broken" in done.stdout


def test_app_runs_root_holds_only_its_facade_and_every_module_is_in_a_room() -> None:
    """``app/runs/`` holds its façade (``__init__.py``) and the rooms of the contract inside it; every
    module of ``app.runs`` lives in one of them, so none escapes the rooms' layers."""
    (rooms,) = [_names(c["layers"]) for c in _contracts() if c.get("containers") == ["app.runs"]]
    runs = ROOT / "app" / "runs"
    assert [path.name for path in runs.glob("*.py")] == ["__init__.py"]
    packages = {path.name for path in runs.iterdir() if (path / "__init__.py").is_file()}
    assert packages == rooms, "app/runs/ holds exactly the rooms its contract names"
    outside = [path for path in runs.rglob("*.py") if path.relative_to(runs).parts[0] not in rooms]
    assert outside == [runs / "__init__.py"]


def test_outside_app_runs_every_package_is_kept_to_the_facade() -> None:
    """The contract that keeps the rest of ``app`` to the façade ``app.runs`` names every package of
    ``app`` but ``app.runs`` itself, and forbids every room."""
    (facade,) = [
        c for c in _contracts() if c["type"] == "forbidden" and c["source_modules"][0].startswith("app")
    ]
    (rooms,) = [_names(c["layers"]) for c in _contracts() if c.get("containers") == ["app.runs"]]
    assert set(facade["source_modules"]) == _app_top_level() - {"app.runs"}
    assert set(facade["forbidden_modules"]) == {f"app.runs.{room}" for room in rooms}
    assert facade["allow_indirect_imports"] is True
