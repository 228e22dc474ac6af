"""Repositories (moved into a package; split by aggregate next)."""

from app.persistence.repositories.sessions import (
    RUN_EVENTS_CHANNEL,
    AgentRepository,
    MessageRepository,
    ModelRepository,
    QuotaRepository,
    RunEventRepository,
    RunRepository,
    SessionRepository,
    UploadRepository,
    parse_uuid,
    utcnow,
)

__all__ = [
    "RUN_EVENTS_CHANNEL",
    "AgentRepository",
    "MessageRepository",
    "ModelRepository",
    "QuotaRepository",
    "RunEventRepository",
    "RunRepository",
    "SessionRepository",
    "UploadRepository",
    "parse_uuid",
    "utcnow",
]
