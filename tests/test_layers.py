"""The layer rules in pyproject.toml (import-linter) hold, and they cover every module of ``app/``; no
function, module or module docstring of ``app/``, ``providers/``, ``tools/`` is over its length limit; no test
module imports another (what tests share lives in ``tests/support/``).

A package that is in no layer would be free to import anything, so a new one must be placed first.
"""

from __future__ import annotations

import ast
import re
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
        f"iris.app.{path.stem if path.is_file() else path.name}"
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
    module of ``iris.app.runs`` lives in one of them, so none escapes the rooms' layers."""
    (rooms,) = [_names(c["layers"]) for c in _contracts() if c.get("containers") == ["iris.app.runs"]]
    runs = ROOT / "app" / "runs"
    assert [path.name for path in runs.glob("*.py")] == ["__init__.py"]
    packages = {path.name for path in runs.iterdir() if (path / "__init__.py").is_file()}
    assert packages == rooms, "app/runs/ holds exactly the rooms its contract names"
    outside = [path for path in runs.rglob("*.py") if path.relative_to(runs).parts[0] not in rooms]
    assert outside == [runs / "__init__.py"]


def test_outside_app_runs_every_package_is_kept_to_the_facade() -> None:
    """The contract that keeps the rest of ``app`` to the façade ``iris.app.runs`` names every package of
    ``app`` but ``iris.app.runs`` itself, and forbids every room."""
    (facade,) = [
        c for c in _contracts() if c["type"] == "forbidden" and c["source_modules"][0].startswith("iris.app")
    ]
    (rooms,) = [_names(c["layers"]) for c in _contracts() if c.get("containers") == ["iris.app.runs"]]
    assert set(facade["source_modules"]) == _app_top_level() - {"iris.app.runs"}
    assert set(facade["forbidden_modules"]) == {f"iris.app.runs.{room}" for room in rooms}
    assert facade["allow_indirect_imports"] is True


SOURCE_ROOTS = ("app", "providers", "tools")
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 450
MAX_MODULE_DOCSTRING_LINES = 30


def _source_files() -> list[Path]:
    return sorted(path for root in SOURCE_ROOTS for path in (ROOT / root).rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_no_function_is_longer_than_eighty_lines() -> None:
    long: dict[str, int] = {}
    for path in _source_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{_name(path)}:{node.name}"] = lines
    assert long == {}, "split these into named steps"


def test_no_module_is_longer_than_four_hundred_and_fifty_lines() -> None:
    long = {
        _name(path): n
        for path in _source_files()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, "split these by what they hold"


def test_no_module_docstring_is_longer_than_thirty_lines() -> None:
    long: dict[str, int] = {}
    for path in _source_files():
        docstring = ast.get_docstring(ast.parse(path.read_text(), filename=str(path)), clean=False)
        if docstring is not None and len(docstring.splitlines()) > MAX_MODULE_DOCSTRING_LINES:
            long[_name(path)] = len(docstring.splitlines())
    assert long == {}, "a docstring says what and why; measurements and history go to an ADR"


TEST_MODULE = re.compile(r"tests(\..+)?\.test_\w+")


def _imported(path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules ``node`` of the test file ``path`` imports, relative imports resolved, and for
    ``from package import name`` each ``package.name`` too (``name`` may be a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = path.relative_to(ROOT).parent.parts
    within = package[: len(package) - node.level + 1] if node.level else ()
    base = ".".join([*within, *([node.module] if node.module else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def test_no_test_module_imports_another() -> None:
    found = [
        f"{_name(path)}:{node.lineno} {module}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for module in _imported(path, node)
        if TEST_MODULE.fullmatch(module)
    ]
    assert found == [], "move what these share into tests/support/"
