"""A tool call's arguments checked against the tool's JSON Schema before anything else happens.

Every tool source (plugin tools, the built-ins, MCP servers) declares its arguments as a JSON Schema; a
call the model makes is checked against it first, before the user is asked to approve it and before
it runs: a call that cannot run goes back to the model as a tool error that says what is wrong (so it
can correct itself), and never to the user as an approval. A schema the validator cannot use (an MCP
server's broken or remote-referencing schema) checks nothing: the tool itself judges then.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import referencing.exceptions

from iris.tools import ToolFailed


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
