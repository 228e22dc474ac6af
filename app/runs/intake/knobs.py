"""The client's sampling and format knobs (``RequestOptions``) against what a model honours.

A knob the model's ``Capabilities.parameters`` does not list is refused before any I/O with 422
``parameter_unsupported`` naming it, never silently dropped: a client asking for JSON output or a seed
must not get an answer that ignored it.
"""

from __future__ import annotations

from iris.app.errors import Unprocessable
from iris.providers import Capabilities, RequestOptions

NO_OPTIONS = RequestOptions()
"""No knob set: every vendor default."""


def check_parameters(caps: Capabilities, options: RequestOptions, *, model_ref: str) -> None:
    """422 ``parameter_unsupported`` (``field`` = the knob) for the first set knob the model ignores."""
    honoured = caps.parameters
    fmt = options.response_format
    asked = {
        "temperature": (options.temperature is not None, honoured.temperature),
        "top_p": (options.top_p is not None, honoured.top_p),
        "stop": (bool(options.stop), honoured.stop),
        "seed": (options.seed is not None, honoured.seed),
        "max_tokens": (options.max_output_tokens is not None, honoured.max_output_tokens),
        "response_format": (
            fmt is not None,
            fmt is not None and (honoured.json_object if fmt.type == "json_object" else honoured.json_schema),
        ),
        "tool_choice": (options.tool_choice is not None, honoured.tool_choice),
        "parallel_tool_calls": (options.parallel_tool_calls is not None, honoured.parallel_tool_calls),
    }
    for name, (given, supported) in asked.items():
        if given and not supported:
            raise Unprocessable(
                f"{model_ref} does not support {name!r}.", code="parameter_unsupported", field=name
            )
