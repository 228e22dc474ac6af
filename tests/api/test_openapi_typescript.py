"""A TypeScript client generated from the document (`openapi-typescript`, under Node) has no `unknown`
in our bodies and events, and compiles."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.npm import npm_install
from tests.support.openapi import document
from tests.support.waits import SUBPROCESS_SECONDS

# Response headers are open in every generated operation; they are not a body or an event.
_HEADERS = re.compile(r"^\s*\[name: string\]: unknown;$")
_UNKNOWN = re.compile(r"\bunknown\b")
_STRING = re.compile(r'"[^"]*"')  # string literal types ("tool_call_unknown" is a code, not a type)


@pytest.fixture(scope="session")
def generator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temp dir with `openapi-typescript` (package.json); skipped (with the reason) without Node."""
    return npm_install(tmp_path_factory, "openapi-typescript", "openapi-typescript", "typescript")


def test_the_generated_client_types_have_no_unknown(generator: Path) -> None:
    (generator / "openapi.json").write_text(json.dumps(document()))
    generated = subprocess.run(
        [str(generator / "node_modules/.bin/openapi-typescript"), "openapi.json", "-o", "iris.d.ts"],
        cwd=generator,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )
    assert generated.returncode == 0, generated.stderr
    types = (generator / "iris.d.ts").read_text()
    code = [line for line in types.splitlines() if not line.lstrip().startswith(("/**", "*"))]
    unknown = [line for line in code if _UNKNOWN.search(_STRING.sub('""', line)) and not _HEADERS.match(line)]
    assert unknown == []
    assert "@enum {unknown}" not in types
    assert 'type: "RUN_STARTED"' in types  # the events really are in there, by tag
    assert '"iris/workerAgentOutput"?: components["schemas"]["WorkerAgentOutput"]' in types

    compiled = subprocess.run(
        [str(generator / "node_modules/.bin/tsc"), "--noEmit", "--strict", "iris.d.ts"],
        cwd=generator,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stdout
