"""The pages say what the code is: every setting documented (and nothing documented that is not one),
every module where docs/modules.md says it lives, and every page short enough to read."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

from iris.app.persistence.migrations import REPO_ROOT

DOCS = REPO_ROOT / "docs"
PAGE_LIMIT = 400
README_LIMIT = 250
CODE_ROOTS = ("app", "providers", "tools")
NOT_SETTINGS = frozenset({"IRIS_TEST_DATABASE_URL"})
"""``IRIS_*`` names the pages may mention that are not settings (``load_settings`` skips ``IRIS_TEST_*``)."""


def generator() -> ModuleType:
    """docs/gen_settings.py, loaded from its file (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_settings", DOCS / "gen_settings.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pages() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_the_settings_table_is_what_settings_says() -> None:
    gen = generator()
    page = gen.PAGE.read_text()
    assert gen.page_block(page) == gen.table(), "configuration.md differs: run python docs/gen_settings.py"


def test_every_setting_is_in_the_table_and_every_row_is_a_setting() -> None:
    gen = generator()
    rows = set(re.findall(r"^\| `(IRIS_[A-Z0-9_]+)` \|", gen.page_block(gen.PAGE.read_text()), re.M))
    settings = set(gen.env_names())
    assert settings, "no IRIS_* setting found in Settings"
    assert rows == settings, f"documented only: {rows - settings}; undocumented: {settings - rows}"


def test_every_iris_name_the_pages_mention_is_a_setting() -> None:
    """A renamed or removed setting left in any page (README included) fails here. A name written as a
    family (``IRIS_QUOTA_*``, ``IRIS_TOOL_RESULT_MAX_*``) must begin at least one setting. Decision
    records are history and may name a setting as it was then."""
    settings = set(generator().env_names()) | NOT_SETTINGS
    for page in pages():
        if "adr" in page.relative_to(REPO_ROOT).parts:
            continue
        for name, wildcard in set(re.findall(r"\b(IRIS_[A-Z0-9_]*)(\*?)", page.read_text())):
            if wildcard or name.endswith("_"):
                assert any(s.startswith(name) for s in settings), f"{page.name} names {name}*"
            else:
                assert name in settings, f"{page.name} names {name}, which is no setting"


def module_map(text: str) -> set[str]:
    """(folder/module.py) pairs docs/modules.md names: each ``.py`` in backticks under a heading
    that names its folder in backticks (``## `app/runs/` ``), until the next heading."""
    named: set[str] = set()
    folder: str | None = None
    for line in text.splitlines():
        if line.startswith("#"):
            match = re.search(r"`((?:app|providers|tools)(?:/[\w.]+)*/)`", line)
            folder = match.group(1) if match else None
        elif folder:
            named |= {folder + name for name in re.findall(r"`([\w]+\.py)`", line)}
    return named


def test_every_module_is_named_under_its_folder_in_modules() -> None:
    on_disk = {
        path.relative_to(REPO_ROOT).as_posix()
        for root in CODE_ROOTS
        for path in (REPO_ROOT / root).rglob("*.py")
        if path.name != "__init__.py" and "static" not in path.parts
    }
    named = module_map((DOCS / "modules.md").read_text())
    assert not on_disk - named, f"docs/modules.md does not name: {sorted(on_disk - named)}"
    assert not named - on_disk, f"docs/modules.md names missing modules: {sorted(named - on_disk)}"


def test_module_map_entries_are_read_under_their_heading() -> None:
    text = "### `app/x/`\n`a.py`, `b.py`\n## Other\n`c.py`\n### `tools/`\n- `d.py`: it\n"
    assert module_map(text) == {"app/x/a.py", "app/x/b.py", "tools/d.py"}


def test_no_page_is_too_long_to_read() -> None:
    readme = (REPO_ROOT / "README.md").read_text().count("\n")
    assert readme <= README_LIMIT, f"README.md has {readme} lines (at most {README_LIMIT})"
    long = {
        page.relative_to(REPO_ROOT).as_posix(): lines
        for page in DOCS.rglob("*.md")
        if (lines := page.read_text().count("\n")) > PAGE_LIMIT
    }
    assert not long, f"pages over {PAGE_LIMIT} lines: {long}"


def test_the_readme_starts_with_the_two_commands() -> None:
    top = (REPO_ROOT / "README.md").read_text().splitlines()[:12]
    block = "\n".join(top)
    assert "pip install rust-just" in block
    assert "just run" in block
    assert "just test" in block


ADR_LIMIT = 60
ADR_STATUS = re.compile(r"^Status: (accepted|rejected|superseded by \d{4})\b", re.MULTILINE)


def test_every_decision_record_is_short_has_a_status_and_is_in_the_index() -> None:
    records = sorted((DOCS / "adr").glob("[0-9][0-9][0-9][0-9]-*.md"))
    index = (DOCS / "adr" / "README.md").read_text()
    assert [int(path.name[:4]) for path in records] == list(range(1, len(records) + 1)), (
        "numbers run 0001, 0002…"
    )
    for path in records:
        text = path.read_text()
        assert text.startswith(f"# ADR {path.name[:4]}: "), f"{path.name}: the title says its number"
        assert ADR_STATUS.search(text), f"{path.name}: no Status line"
        assert text.count("\n") <= ADR_LIMIT, f"{path.name} is over {ADR_LIMIT} lines"
        assert f"]({path.name})" in index, f"{path.name} is not in docs/adr/README.md"
