"""The shell examples of README.md and docs/getting-started.md, run as written against a real server.

A fenced ``sh``/``bash`` block right after a ``<!-- test -->`` line is runnable. A page's runnable blocks
run in order as one bash script (so a variable set in one is there in the next), against one
``python -m iris serve`` on a free loopback port with a fresh data directory. Only the address changes:
``127.0.0.1:8000`` becomes the test server's. ``just token`` is a stand-in on PATH that runs
``python -m iris token`` on the same data directory, and ``curl`` fails on an HTTP error status, so an
example that stops working fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from iris.app.persistence.migrations import REPO_ROOT
from tests.support.images import image_bytes
from tests.support.iris_process import iris_process
from tests.support.postgres import free_port
from tests.support.waits import SUBPROCESS_SECONDS

pytestmark = pytest.mark.slow

MARKER = "<!-- test -->"
FENCE = re.compile(r"^```(?:sh|bash)\s*$")
DOC_ADDRESS = "127.0.0.1:8000"
PRELUDE = 'curl() { command curl --fail-with-body --max-time 60 "$@"; }\n'
"""Every example's curl fails (exit 22) on a 4xx or 5xx answer, printing the problem it got."""


@dataclass(frozen=True)
class Server:
    address: str
    data_dir: Path
    work_dir: Path
    bin_dir: Path


def runnable_blocks(page: Path) -> list[str]:
    """The bodies of the fenced shell blocks that follow a ``<!-- test -->`` line (blank lines between)."""
    lines = page.read_text().splitlines()
    blocks: list[str] = []
    armed = False
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        if line == MARKER:
            armed = True
        elif armed and FENCE.match(line):
            end = lines.index("```", index + 1)
            blocks.append("\n".join(lines[index + 1 : end]))
            armed, index = False, end
        elif line:
            armed = False
        index += 1
    return blocks


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for every page's examples; a work directory holding the files they upload."""
    root = tmp_path_factory.mktemp("docs-examples")
    data, work, bin_dir = root / "data", root / "work", root / "bin"
    work.mkdir()
    bin_dir.mkdir()
    (work / "cat.png").write_bytes(image_bytes("PNG", (64, 48)))
    just = bin_dir / "just"
    just.write_text(
        f'#!/bin/sh\n[ "$1" = token ] || {{ echo "tests/docs: only just token here" >&2; exit 99; }}\n'
        f'shift\nexec "{sys.executable}" -m iris token "$@"\n'
    )
    just.chmod(0o755)
    port = free_port()
    with iris_process({"IRIS_DATA_DIR": str(data)}, port, root / "iris.log"):
        yield Server(address=f"127.0.0.1:{port}", data_dir=data, work_dir=work, bin_dir=bin_dir)


def run_page(page: Path, server: Server) -> subprocess.CompletedProcess[str]:
    blocks = runnable_blocks(page)
    assert blocks, f"{page.name} has no runnable example (a {MARKER} line before a ```sh block)"
    script = PRELUDE + "\n".join(blocks).replace(DOC_ADDRESS, server.address)
    env = {
        "PATH": f"{server.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(server.work_dir),
        "IRIS_DATA_DIR": str(server.data_dir),
        "PYTHONPATH": str(REPO_ROOT),
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=server.work_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (
            "README.md",
            ['"kind":"image"', "RUN_FINISHED", '"object":"chat.completion"', '"sessions"', '"results"'],
        ),
        ("docs/getting-started.md", ['"accessToken"', '"models"', '"slug":"reviewer"', "local/vision"]),
    ],
)
def test_a_pages_shell_examples_run_against_a_real_server(
    server: Server, page: str, expected: list[str]
) -> None:
    done = run_page(REPO_ROOT / page, server)
    assert done.returncode == 0, f"{page}'s examples failed:\n{done.stdout}\n{done.stderr}"
    for text in expected:
        assert text in done.stdout, f"{page}'s examples printed no {text!r}:\n{done.stdout}"


def test_only_marked_shell_blocks_are_runnable(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        f"```sh\nnot run\n```\n{MARKER}\n\n```sh\necho one\n```\n{MARKER}\ntext\n```sh\nnot run\n```\n"
        f"{MARKER}\n```bash\necho two\n```\n"
    )
    assert runnable_blocks(page) == ["echo one", "echo two"]
