"""The documentation site builds strict, as `just docs` builds it: a broken link, an unknown anchor, a
page missing from the nav or a nav entry without its page fails the suite (and so CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from iris.app.persistence.migrations import REPO_ROOT
from tests.support.waits import SUBPROCESS_SECONDS

pytestmark = pytest.mark.slow


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )


def test_the_site_builds_strict_with_no_external_asset(tmp_path: Path) -> None:
    done = build(REPO_ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "configuration.html").read_text()
    assert "IRIS_DATA_DIR" in page
    for built in (tmp_path / "site").glob("*.html"):
        text = built.read_text()
        assert '<script src="http' not in text, f"{built.name} loads a script from the network"
        assert 'rel="stylesheet" href="http' not in text, f"{built.name} loads a stylesheet from the network"


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The same configuration over a copy of the pages with one link that leads nowhere."""
    copy = tmp_path / "repo"
    (copy / "docs").mkdir(parents=True)
    for source in (REPO_ROOT / "docs").rglob("*"):
        if source.is_file():
            target = copy / "docs" / source.relative_to(REPO_ROOT / "docs")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    (copy / "mkdocs.yml").write_text((REPO_ROOT / "mkdocs.yml").read_text())
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [nowhere](no-such-page.md#nothing).\n")
    done = build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr
