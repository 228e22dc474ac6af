"""The layer rules in pyproject.toml (import-linter) hold, and they cover every module of ``app/``.

A package that is in no layer would be free to import anything, so a new one must be placed first.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.waits import SUBPROCESS_SECONDS

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _layer_modules() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    return {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}


def test_every_module_of_app_is_in_a_layer() -> None:
    top_level = {
        f"app.{path.stem if path.is_file() else path.name}"
        for path in (ROOT / "app").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }
    assert top_level - _layer_modules() == set(), "place these in a layer in pyproject.toml"


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
    assert "3 kept, 0 broken" in done.stdout
