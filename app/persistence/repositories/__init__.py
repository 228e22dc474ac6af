"""Repositories: advanced-alchemy's async repository plus the named queries the service needs.

Controllers never build SQL; they call these methods. One module per aggregate (``catalogue``:
models and agents; ``cooldowns``: failing models; ``mcp_servers``; ``mcp_grants``: sign-ins at MCP servers;
``api_keys``; ``audit``;
``sessions``: threads and their messages; ``runs``: runs and their event logs; ``uploads``; ``usage``:
spend summed from the runs and calls; ``spend``: the ledger of holds and calls (ADR 0085);
``quotas``; ``responses``: the Responses API's stored answers; ``search``: the full-text index over
sessions; ``intake_rows`` and ``closing_rows``: a run's first and last writes without the ORM),
``_common`` for what they share and ``_driver_sql`` for what the writers without the
ORM share. Import from this package, not from its modules: every public name is here.
"""

from iris.app.persistence.repositories._common import parse_uuid, utcnow
from iris.app.persistence.repositories.api_keys import ApiKeyRepository
from iris.app.persistence.repositories.audit import AuditRepository
from iris.app.persistence.repositories.catalogue import AgentRepository, ModelRepository
from iris.app.persistence.repositories.closing_rows import (
    RUN_EVENTS_CHANNEL,
    AnswerMessage,
    AuditRow,
    ClosingRows,
)
from iris.app.persistence.repositories.cooldowns import CooldownRepository
from iris.app.persistence.repositories.intake_rows import IntakeRows
from iris.app.persistence.repositories.mcp_grants import McpGrantRepository
from iris.app.persistence.repositories.mcp_servers import McpServerRepository
from iris.app.persistence.repositories.quotas import QuotaRepository
from iris.app.persistence.repositories.responses import GatewayResponseRepository
from iris.app.persistence.repositories.runs import RunEventRepository, RunRepository
from iris.app.persistence.repositories.search import SearchHit, SearchRepository
from iris.app.persistence.repositories.sessions import (
    IntakeRead,
    MessageRepository,
    SessionRepository,
    TreeRow,
    chain,
    place,
)
from iris.app.persistence.repositories.spend import CallSpend, SpendHold, SpendRepository, Subject
from iris.app.persistence.repositories.uploads import UploadRepository
from iris.app.persistence.repositories.usage import GroupBy, UsageRepository, spent_since, tokens_since

__all__ = [
    "RUN_EVENTS_CHANNEL",
    "AgentRepository",
    "AnswerMessage",
    "ApiKeyRepository",
    "AuditRepository",
    "AuditRow",
    "CallSpend",
    "ClosingRows",
    "CooldownRepository",
    "GatewayResponseRepository",
    "GroupBy",
    "IntakeRead",
    "IntakeRows",
    "McpGrantRepository",
    "McpServerRepository",
    "MessageRepository",
    "ModelRepository",
    "QuotaRepository",
    "RunEventRepository",
    "RunRepository",
    "SearchHit",
    "SearchRepository",
    "SessionRepository",
    "SpendHold",
    "SpendRepository",
    "Subject",
    "TreeRow",
    "UploadRepository",
    "UsageRepository",
    "chain",
    "parse_uuid",
    "place",
    "spent_since",
    "tokens_since",
    "utcnow",
]
