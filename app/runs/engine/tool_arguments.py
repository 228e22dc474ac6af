"""A tool call's arguments checked against the tool's JSON Schema before anything else happens, and the
call itself (:func:`call_tool`), bounded by the tool's timeout.

Every tool source (plugin tools, the built-ins, MCP servers) declares its arguments as a JSON Schema; a
call the model makes is checked against it first, before the user is asked to approve it and before
it runs: a call that cannot run goes back to the model as a tool error that says what is wrong (so it
can correct itself), and never to the user as an approval. A schema the validator cannot use (an MCP
server's broken or remote-referencing schema) checks nothing: the tool itself judges then.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import referencing.exceptions

from iris.app.mcp.elicitation import InputRequired
from iris.app.runs.intake.toolbox import RunTool
from iris.tools import ToolContext, ToolFailed, ToolResult

log = logging.getLogger("iris.runs")


def parse_arguments(arguments: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The model's JSON arguments as an object that ``schema`` accepts; :class:`ToolFailed` saying
    what is wrong otherwise (the model reads it)."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except ValueError as exc:
        raise ToolFailed(f"invalid arguments: not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise ToolFailed("invalid arguments: not a JSON object")
    problem = schema_problem(parsed, schema)
    if problem is not None:
        raise ToolFailed(f"invalid arguments: {problem}")
    return parsed


def argument_problem(arguments: str, schema: Mapping[str, Any]) -> str | None:
    """What is wrong with a call's arguments (``None``: nothing the schema can tell)."""
    try:
        parse_arguments(arguments, schema)
    except ToolFailed as exc:
        return str(exc)
    return None


def schema_problem(value: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """The most relevant way ``value`` breaks ``schema``, with where (``None``: it does not, or the
    schema cannot be used)."""
    if not schema:
        return None
    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator_class.check_schema(schema)
        error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(value))
    except (jsonschema.exceptions.SchemaError, referencing.exceptions.Unresolvable):
        return None
    if error is None:
        return None
    where = "/".join(str(step) for step in error.absolute_path)
    return f"{error.message} (at {where})" if where else error.message


def runnable(tool: RunTool, arguments: str) -> bool:
    """Whether a call's arguments are ones the tool's schema accepts: only such a call is put to the
    user for approval; any other is run straight away, to fail as an error the model reads."""
    return argument_problem(arguments, tool.parameters) is None


async def call_tool(tool: RunTool, arguments: str, context: ToolContext) -> ToolResult:
    """The model's JSON arguments (an object its schema accepts) to the tool, within its timeout;
    what it raises is a :class:`ToolFailed`."""
    parsed = parse_arguments(arguments, tool.parameters)
    try:
        async with asyncio.timeout(tool.timeout_seconds):
            answer = await tool.invoke(parsed, context)
    except (ToolFailed, InputRequired):
        raise
    except TimeoutError:
        raise ToolFailed(f"it did not answer within {tool.timeout_seconds:g} s") from None
    except Exception as exc:  # a plugin's bug is the tool's failure, not the run's
        log.warning("tool %s raised", tool.name, exc_info=True)
        raise ToolFailed(f"{type(exc).__name__}: {exc}") from None
    if not isinstance(answer, ToolResult):
        raise ToolFailed(f"it returned {type(answer).__name__}, not a ToolResult")
    return answer
