"""A run that starts from one of the agent's MCP prompts: ``forwardedProps.prompt = {name, arguments}``
(``name`` is ``{server}__{prompt}``, as ``GET /api/agents/{slug}/prompts`` lists it). The server's
prompt messages become one new user message of the run, recorded as the user's (the model reads them
as the user's words, and history shows them), before any model turn.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from iris.app.agui.input import InboundUser
from iris.app.errors import Unprocessable
from iris.app.persistence.repositories import McpServerRepository
from iris.app.runs.intake.toolbox import Toolbox

FIELD = "forwardedProps.prompt"


async def prompt_message(
    forwarded: Mapping[str, Any],
    tools: Sequence[str],
    toolbox: Toolbox,
    servers: McpServerRepository,
    owner: str | None = None,
) -> InboundUser | None:
    """The user message a requested prompt gives (none when no prompt is asked for); 422
    ``prompt_not_found`` for a prompt none of the agent's servers offers, ``prompt_failed`` when the
    server refuses or cannot give it."""
    asked = forwarded.get("prompt")
    if asked is None:
        return None
    name, arguments = _checked(asked)
    server, _, prompt = name.partition("__")
    connection = next(
        (c for c in await toolbox.agent_servers(tools, servers, owner) if c.config.name == server), None
    )
    if connection is None or not prompt:
        raise Unprocessable(
            f"This agent has no MCP prompt {name!r}.", code="prompt_not_found", field=f"{FIELD}.name"
        )
    try:
        text = await connection.prompt(prompt, arguments)
    except Exception as exc:  # a server down, refusing, or answering nonsense: the run does not start
        raise Unprocessable(
            f"The prompt {name!r} could not be fetched: {exc}", code="prompt_failed", field=FIELD
        ) from None
    if not text.strip():
        raise Unprocessable(f"The prompt {name!r} has no text.", code="prompt_failed", field=FIELD)
    return InboundUser(id=str(uuid.uuid4()), parts=(text,), field=FIELD)


def _checked(asked: object) -> tuple[str, dict[str, str]]:
    """``{name, arguments}``: a name, and string arguments (MCP prompt arguments are strings)."""
    if not isinstance(asked, Mapping) or not isinstance(asked.get("name"), str):
        raise Unprocessable("'prompt' must be {name, arguments}.", code="validation_failed", field=FIELD)
    arguments = asked.get("arguments") or {}
    if not isinstance(arguments, Mapping) or not all(isinstance(v, str) for v in arguments.values()):
        raise Unprocessable(
            "A prompt's 'arguments' must be an object of strings.",
            code="validation_failed",
            field=f"{FIELD}.arguments",
        )
    return asked["name"], dict(arguments)
