"""``GET /api/usage/me``: the caller's spend this day and month against their budgets, and their role
(what the chat page's "Keys & spend" panel shows)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable

import msgspec
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.runs import of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]


async def test_my_spend_is_the_runs_cost_against_the_budgets(settings: Settings, auth: Auth) -> None:
    budgeted = msgspec.structs.replace(settings, budget_user_day_usd=2.5, budget_user_month_usd=40.0)
    async with AsyncTestClient(app=create_app(budgeted, environ={})) as client:
        admin = auth("root", "admin")
        pricing = {"pricing": {"input": 3.0, "output": 15.0}}
        body = {
            "name": "priced",
            "provider": "local",
            "modelId": "priced",
            "type": "text",
            "options": pricing,
        }
        created = await client.post("/api/models", json=body, headers=admin)
        assert created.status_code == 201, created.text
        await offer(client, admin, created.json()["ref"])
        before = (await client.get("/api/usage/me", headers=auth("alice"))).json()
        assert (before["user"], before["role"], before["day"]["spent"]) == ("alice", "user", 0.0)
        assert (before["day"]["budget"], before["month"]["budget"]) == (2.5, 40.0)
        ends = dt.datetime.fromisoformat(before["day"]["endsAt"])
        assert (ends.hour, ends.minute, ends.utcoffset()) == (0, 0, dt.timedelta(0))
        assert dt.datetime.fromisoformat(before["month"]["endsAt"]).day == 1

        message = user_message("what does this cost?")
        events = await run(
            client, auth("alice"), run_input(str(uuid.uuid4()), message, model=created.json()["ref"])
        )
        cost = of_type(events, "RUN_FINISHED")[0]["metadata"]["iris/usage"]["cost"]["total"]
        after = (await client.get("/api/usage/me", headers=auth("alice"))).json()
        assert abs(after["day"]["spent"] - cost) < 1e-6
        assert abs(after["month"]["spent"] - cost) < 1e-6
        assert (await client.get("/api/usage/me", headers=auth("bob"))).json()["day"]["spent"] == 0.0

        mine = (await client.get("/api/usage/me", headers=admin)).json()
        assert (mine["role"], mine["day"]["budget"], mine["month"]["budget"]) == ("admin", None, None)
        guest = (await client.post("/api/auth/guest")).json()["accessToken"]
        theirs = await client.get("/api/usage/me", headers={"Authorization": f"Bearer {guest}"})
        assert (theirs.json()["role"], theirs.json()["day"]["budget"]) == ("guest", 2.5)
        assert (await client.get("/api/usage/me")).status_code == 401
