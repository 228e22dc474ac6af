"""``GET /api/usage``: what runs and stateless calls cost, grouped by user, key, agent, model or day;
``/api/usage/export`` as CSV. A user sees their own; an admin everyone's, or one user's."""

from __future__ import annotations

import csv
import datetime as dt
import io

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import FromQuery

from iris.app.api.openapi import documented
from iris.app.errors import Forbidden, Unprocessable
from iris.app.persistence.repositories import UsageRepository
from iris.app.schemas.usage import GroupByName, UsageReport, UsageRow
from iris.app.security.auth import Principal

MAX_DAYS = 366
_CHECKS = {403: ["admin_required"], 422: ["usage_range_invalid", "validation_failed"]}


class UsageController(Controller):
    """Spend from the runs' stored costs (each run's cost is also in its ``RUN_FINISHED`` metadata) and
    the stateless calls' (the spend ledger)."""

    path = "/api/usage"
    tags = ["Usage"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, UsageRepository]

    @get("/", operation_id="GetUsage", operation_class=documented(problems=_CHECKS))
    async def usage(
        self,
        principal: NamedDependency[Principal],
        usage_repo: NamedDependency[UsageRepository],
        groupBy: FromQuery[GroupByName] = "day",
        since: FromQuery[dt.date | None] = None,
        until: FromQuery[dt.date | None] = None,
        user: FromQuery[str | None] = None,
    ) -> UsageReport:
        """Cost, runs and tokens per group, for runs started from since (default: 30 days ago) until the
        day before until (default: tomorrow). Users see their own; admins everyone's, or one user's."""
        return await _report(principal, usage_repo, groupBy, since, until, user)

    @get(
        "/export",
        operation_id="ExportUsage",
        operation_class=documented(ok={"text/csv": Schema(type=OpenAPIType.STRING)}, problems=_CHECKS),
    )
    async def export(
        self,
        principal: NamedDependency[Principal],
        usage_repo: NamedDependency[UsageRepository],
        groupBy: FromQuery[GroupByName] = "day",
        since: FromQuery[dt.date | None] = None,
        until: FromQuery[dt.date | None] = None,
        user: FromQuery[str | None] = None,
    ) -> Response[bytes]:
        """The same report as CSV: one line per group (group, runs, cost, input and output tokens, calls)."""
        report = await _report(principal, usage_repo, groupBy, since, until, user)
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow([report.group_by, "runs", "cost_usd", "input_tokens", "output_tokens", "calls"])
        for row in report.rows:
            writer.writerow(
                [row.group or "", row.runs, f"{row.cost:.6f}", row.input_tokens, row.output_tokens, row.calls]
            )
        filename = f"iris-usage-{report.group_by}-{report.since}-{report.until}.csv"
        return Response(
            out.getvalue().encode(),
            media_type="text/csv",
            headers={"content-disposition": f'attachment; filename="{filename}"'},
        )


async def _report(
    principal: Principal,
    usage_repo: UsageRepository,
    group_by: GroupByName,
    since: dt.date | None,
    until: dt.date | None,
    user: str | None,
) -> UsageReport:
    today = dt.datetime.now(dt.UTC).date()
    until = until or today + dt.timedelta(days=1)
    since = since or until - dt.timedelta(days=31)
    if not since < until or (until - since).days > MAX_DAYS:
        raise Unprocessable(
            f"since must come before until, at most {MAX_DAYS} days apart.", code="usage_range_invalid"
        )
    if principal.is_admin:
        owner = user
    elif user is not None and user != principal.user_id:
        raise Forbidden("Only an admin sees another user's usage.", code="admin_required")
    else:
        owner = principal.user_id
    start = dt.datetime.combine(since, dt.time(), dt.UTC)
    end = dt.datetime.combine(until, dt.time(), dt.UTC)
    summed = await usage_repo.summed(group_by, start, end, owner)
    rows = [
        UsageRow(
            group=row.group,
            runs=row.runs,
            calls=row.calls,
            cost=round(row.cost, 6),
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
        )
        for row in summed
    ]
    return UsageReport(
        group_by=group_by,
        since=since,
        until=until,
        user=owner,
        rows=rows,
        total_cost=round(sum(row.cost for row in rows), 6),
    )
