"""Every AG-UI event Iris can send, at its smallest (each optional field at its default, which
``omit_defaults`` drops) and with every optional field set, against ag-ui-protocol's own types through the
strict oracle and through ``@ag-ui/core``'s zod schemas (stricter than the Python types about
``REASONING_MESSAGE_START``'s ``role``): a field the protocol requires never vanishes because it equals
its default."""

from __future__ import annotations

import json
import shutil
import subprocess
import typing
from pathlib import Path

import msgspec
import pytest

from iris.app.agui import events
from tests.support.agui import validate_event
from tests.support.minimal_structs import encoded, filled, minimal
from tests.support.npm import npm_install
from tests.support.waits import REQUEST_SECONDS

EVENT_STRUCTS: tuple[type[msgspec.Struct], ...] = typing.get_args(events.AgUiEvent)
SCHEMAS = Path(__file__).with_name("agui_schemas.mjs")


@pytest.mark.parametrize("struct", EVENT_STRUCTS, ids=lambda s: s.__name__)
def test_each_event_at_its_defaults_is_a_valid_agui_event(struct: type[msgspec.Struct]) -> None:
    validate_event(encoded(minimal(struct)))


@pytest.mark.parametrize("struct", EVENT_STRUCTS, ids=lambda s: s.__name__)
def test_each_event_with_every_field_set_is_a_valid_agui_event(struct: type[msgspec.Struct]) -> None:
    validate_event(encoded(filled(struct)))


@pytest.mark.parametrize("outcome", typing.get_args(events.Outcome), ids=lambda s: s.__name__)
def test_each_run_outcome_at_its_defaults_is_valid(outcome: type[events.Outcome]) -> None:
    finished = events.RunFinished(
        thread_id="t", run_id="r", outcome=minimal(outcome), usage=[minimal(events.TokenUsage)]
    )
    validate_event(encoded(finished))


@pytest.fixture(scope="module")
def agui_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(tmp_path_factory, "ag-ui-core-schemas", "@ag-ui/client")
    shutil.copy(SCHEMAS, where / SCHEMAS.name)
    return where


def test_every_event_passes_the_reference_clients_schemas(agui_core: Path) -> None:
    """``@ag-ui/core``'s zod schemas, which the reference client applies, in one Node process."""
    sent = [encoded(build(struct)) for struct in EVENT_STRUCTS for build in (minimal, filled)]
    done = subprocess.run(
        ["node", SCHEMAS.name],
        cwd=agui_core,
        input="".join(json.dumps(event) + "\n" for event in sent),
        capture_output=True,
        text=True,
        timeout=REQUEST_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(sent)
    refused = [(r["type"], r["issues"], event) for r, event in zip(results, sent, strict=True) if not r["ok"]]
    assert not refused
