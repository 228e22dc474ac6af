"""Stored Responses API answers (``/v1/responses``); every lookup is scoped to an owner."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository

from iris.app.persistence.models import GatewayResponse

CHAIN_MAX = 1000
"""The most earlier responses one request continues (a chain is walked one row at a time)."""


class GatewayResponseRepository(SQLAlchemyAsyncRepository[GatewayResponse]):
    """Stored responses and the chains ``previous_response_id`` makes of them."""

    model_type = GatewayResponse

    async def get_owned(self, response_id: UUID, owner_id: str) -> GatewayResponse | None:
        """The response if ``owner_id`` stored it."""
        return await self.get_one_or_none(id=response_id, owner_id=owner_id)

    async def chain(self, last: GatewayResponse) -> list[GatewayResponse]:
        """``last`` and the responses before it, oldest first; a deleted one ends the chain there."""
        rows = [last]
        while rows[-1].previous_id is not None and len(rows) < CHAIN_MAX:
            earlier = await self.get_owned(rows[-1].previous_id, last.owner_id)
            if earlier is None:
                break
            rows.append(earlier)
        return rows[::-1]

    def add_response(
        self,
        response_id: UUID,
        *,
        owner_id: str,
        previous_id: UUID | None,
        model_ref: str,
        body: Mapping[str, Any],
        input_items: list[dict[str, Any]],
    ) -> None:
        """Add a response, written by the caller's commit."""
        self.session.add(
            GatewayResponse(
                id=response_id,
                owner_id=owner_id,
                previous_id=previous_id,
                model_ref=model_ref,
                body=dict(body),
                input_items=input_items,
            )
        )

    async def delete_owned(self, response_id: UUID, owner_id: str) -> bool:
        """Remove one of the owner's responses; whether there was one."""
        row = await self.get_owned(response_id, owner_id)
        if row is not None:
            await self.delete(row.id)
        return row is not None
