"""Agents: what ``/api/agents`` takes and answers, and the snapshot each agent version records."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

import msgspec

from iris.providers.wire import RequestStruct, WireStruct

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Description = Annotated[str, msgspec.Meta(max_length=2000)]
Instructions = Annotated[str, msgspec.Meta(max_length=100_000)]
ModelRef = Annotated[str, msgspec.Meta(min_length=1, max_length=270)]
"""A catalogue model: ``provider/modelId`` (or its id)."""
ToolEntry = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Iterations = Annotated[int, msgspec.Meta(ge=1, le=100)]
Effort = Literal["low", "medium", "high"]
Usd = Annotated[float, msgspec.Meta(ge=0, le=1_000_000_000)]
"""A budget in USD; 0 is no budget, as for the settings' budgets."""


class AgentReasoning(RequestStruct, omit_defaults=True):
    """What the agent's runs ask of a model that reasons, unless the request says otherwise
    (``forwardedProps.enableThinking`` / ``reasoningEffort``, the chat body's ``enableThinking``); over
    the model's own option defaults."""

    enable_thinking: bool | None = None
    reasoning_effort: Effort | None = None


class AgentCreate(RequestStruct, kw_only=True):
    """``POST /api/agents`` and a models file's ``[[agents]]`` entry. ``slug`` is ``[a-z0-9-]{1,64}``.
    ``models`` are what the agent offers (its picker, in order); ``defaultModel`` is one of them (the
    first when omitted; with ``models`` omitted it is the only one). ``tools`` takes tool names
    (``current_time``, ``{server}__{tool}``) and whole MCP servers (``mcp:{server}/*``).
    ``maxToolIterations`` omitted or ``null`` follows ``IRIS_MAX_TOOL_ITERATIONS``. ``budgetDayUsd`` and
    ``budgetMonthUsd`` are what the agent's runs may cost per UTC day and month, over all users (429
    ``budget_exceeded`` after; omitted, ``null`` or 0: no budget)."""

    slug: Annotated[str, msgspec.Meta(max_length=200)]
    name: Name
    description: Description = ""
    instructions: Instructions = ""
    default_model: ModelRef | None = None
    models: Annotated[list[ModelRef], msgspec.Meta(max_length=100)] | None = None
    tools: Annotated[list[ToolEntry], msgspec.Meta(max_length=200)] = msgspec.field(default_factory=list)
    max_tool_iterations: Iterations | None = None
    guest_access: bool = False
    reasoning: AgentReasoning = msgspec.field(default_factory=AgentReasoning)
    enabled: bool = True
    budget_day_usd: Usd | None = None
    budget_month_usd: Usd | None = None


class AgentUpdate(RequestStruct, kw_only=True):
    """``PATCH /api/agents/{slug}``: only the fields present change (the slug never does); ``null``
    clears ``maxToolIterations`` back to the deployment's figure, and a budget."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    description: Description | msgspec.UnsetType = msgspec.UNSET
    instructions: Instructions | msgspec.UnsetType = msgspec.UNSET
    default_model: ModelRef | msgspec.UnsetType = msgspec.UNSET
    models: Annotated[list[ModelRef], msgspec.Meta(max_length=100)] | msgspec.UnsetType = msgspec.UNSET
    tools: Annotated[list[ToolEntry], msgspec.Meta(max_length=200)] | msgspec.UnsetType = msgspec.UNSET
    max_tool_iterations: Iterations | msgspec.UnsetType | None = msgspec.UNSET
    guest_access: bool | msgspec.UnsetType = msgspec.UNSET
    reasoning: AgentReasoning | msgspec.UnsetType = msgspec.UNSET
    enabled: bool | msgspec.UnsetType = msgspec.UNSET
    budget_day_usd: Usd | msgspec.UnsetType | None = msgspec.UNSET
    budget_month_usd: Usd | msgspec.UnsetType | None = msgspec.UNSET


class AgentOut(WireStruct, omit_defaults=True):
    """An agent. ``models`` and ``defaultModel`` are ``provider/modelId`` refs (to users, only enabled
    ones); ``maxToolIterations`` is the figure its runs use; ``version`` counts its changes.
    ``instructions`` (the system prompt) is for admins only."""

    slug: str
    name: str
    description: str
    models: list[str]
    tools: list[str]
    max_tool_iterations: int
    guest_access: bool
    reasoning: AgentReasoning
    enabled: bool
    version: int
    created_at: dt.datetime
    updated_at: dt.datetime
    default_model: str | None = None
    instructions: str | None = None
    budget_day_usd: float | None = None
    """USD the agent's runs may cost per UTC day (absent: no budget)."""
    budget_month_usd: float | None = None


class AgentList(WireStruct):
    """``GET /api/agents``: the agents the caller may use (admins: every agent, disabled ones too)."""

    agents: list[AgentOut]


class AgentRef(WireStruct):
    """Which agent answered, and which version of it (``RUN_STARTED.metadata["iris/agent"]``,
    ``WorkerAgentOutput.agent``)."""

    slug: str
    version: int


class ModelPin(WireStruct):
    """A model as a version recorded it: its catalogue id and the ref it had then."""

    id: str
    ref: str


class AgentSnapshot(WireStruct):
    """Everything an agent was at one version, as stored in ``agent_versions.snapshot`` (never changed)."""

    slug: str
    name: str
    description: str
    instructions: str
    default_model: ModelPin | None
    models: list[ModelPin]
    tools: list[str]
    max_tool_iterations: int | None
    guest_access: bool
    reasoning: AgentReasoning
    enabled: bool

    def offers(self, model_id: str) -> bool:
        """Whether the agent offers this catalogue model (by id)."""
        return any(pin.id == model_id for pin in self.models)


class AgentVersionOut(WireStruct):
    """One recorded version: what runs pointing at it ran with."""

    version: int
    created_at: dt.datetime
    agent: AgentSnapshot


class AgentVersionList(WireStruct):
    """``GET /api/agents/{slug}/versions``, newest first."""

    versions: list[AgentVersionOut]
