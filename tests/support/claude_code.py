"""A request shaped as Claude Code sends it, written from its documentation and published traffic
descriptions (Claude Code's LLM-gateway page: ``ANTHROPIC_BASE_URL`` without ``/v1``,
``ANTHROPIC_AUTH_TOKEN`` sent as ``Authorization: Bearer``, ``anthropic-version``/``anthropic-beta``
headers that a gateway must accept, ``/v1/messages`` and ``/v1/messages/count_tokens``): it always
streams, posts to ``/v1/messages?beta=true``, sends its system prompt as text blocks with
``cache_control``, a user turn whose reminder block is cached too, its client tools (JSON Schema with
``$schema`` and ``additionalProperties``), extended thinking with a large budget, and
``metadata.user_id``."""

from __future__ import annotations

from typing import Any

PATH = "/v1/messages?beta=true"
BETA = "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"


def headers(token: str) -> dict[str, str]:
    """Claude Code's headers with ``ANTHROPIC_AUTH_TOKEN`` set (the SDK's own ``x-stainless-*`` too)."""
    return {
        "accept": "application/json",
        "anthropic-beta": BETA,
        "anthropic-dangerous-direct-browser-access": "true",
        "anthropic-version": "2023-06-01",
        "authorization": f"Bearer {token}",
        "content-type": "application/json",
        "user-agent": "claude-cli/2.1.0 (external, cli)",
        "x-app": "cli",
        "x-stainless-helper-method": "stream",
        "x-stainless-lang": "js",
        "x-stainless-retry-count": "0",
        "x-stainless-timeout": "600",
    }


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#",
    }


TOOLS: list[dict[str, Any]] = [
    {
        "name": "Bash",
        "description": "Executes a given bash command in a persistent shell session.",
        "input_schema": _schema(
            {
                "command": {"type": "string", "description": "The command to execute"},
                "timeout": {"type": "number"},
            },
            ["command"],
        ),
    },
    {
        "name": "Read",
        "description": "Reads a file from the local filesystem.",
        "input_schema": _schema(
            {"file_path": {"type": "string", "description": "The absolute path to the file to read"}},
            ["file_path"],
        ),
        "cache_control": {"type": "ephemeral"},
    },
]


def body(model: str, question: str = "Read package.json and tell me the version.") -> dict[str, Any]:
    """The first request of a session, on ``ANTHROPIC_MODEL`` = ``model``."""
    return {
        "model": model,
        "max_tokens": 32000,
        "stream": True,
        "system": [
            {
                "type": "text",
                "text": "You are Claude Code, Anthropic's official CLI for Claude.",
                "cache_control": {"type": "ephemeral"},
            },
            {
                "type": "text",
                "text": "\nYou are an interactive CLI tool that helps users with software engineering tasks.",
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>\nThe project uses npm.\n</system-reminder>"},
                    {"type": "text", "text": question, "cache_control": {"type": "ephemeral"}},
                ],
            }
        ],
        "tools": TOOLS,
        "thinking": {"type": "enabled", "budget_tokens": 31999},
        "metadata": {"user_id": "user_5f1c0e_account__session_2b7e4c0a-6a51-4f0e-9a3c-0d2f1b7e9c11"},
    }
