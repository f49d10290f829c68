"""The console's webhooks section: subscriptions, a webhook's delivery log (paged, each
delivery with its attempts) and replaying a delivery. Everything through
``platform_api.services.webhooks``, as the /v1 webhook routes do."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response

from platform_api.api.deps import SessionDep, SettingsDep
from platform_api.console import (
    auth,
    relative_time,  # noqa: F401  (the templates' time filter)
)
from platform_api.console.pages import ConsoleRoute, redirect, render
from platform_api.pagination import PageParams, cursor_key
from platform_api.services import webhooks as service
from platform_api.services.console_users import SignedIn

router = APIRouter(route_class=ConsoleRoute)

WEBHOOKS_PER_PAGE = 50
DELIVERIES_PER_PAGE = 20
NOTICES = {"replayed": "The event is queued again, as a new delivery with the same webhook-id."}


def _context(signed_in: SignedIn, environment: str, now: datetime, **extra: Any) -> dict[str, Any]:
    return {
        "operator": signed_in.user,
        "environment": environment,
        "csrf_token": signed_in.session.csrf_token,
        "section": "webhooks",
        "now": now,
        **extra,
    }


def _page(request: Request, limit: int, cursor: str | None) -> PageParams:
    return PageParams(
        limit=limit, next_cursor=cursor or None, cursor_key=cursor_key(request.app.state.settings)
    )


@router.get("/{environment}/webhooks")
def webhook_list(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    session: SessionDep,
    now: auth.NowDep,
    after: str | None = None,
) -> Response:
    webhooks = service.list_webhooks(
        session, environment_id=environment, params=_page(request, WEBHOOKS_PER_PAGE, after)
    )
    hours = service.deliveries_per_hour(session, environment_id=environment, now=now)
    context = _context(
        signed_in, environment, now, webhooks=webhooks, first_page=after is None,
        chart=delivery_chart(hours),
    )  # fmt: skip
    return render(request, "webhooks.html", context)


# The chart's geometry (SVG user units) and the order statuses stack in, bottom up.
CHART_HEIGHT, BAR_WIDTH, BAR_GAP = 120, 20, 4
CHART_STATUSES = ("succeeded", "failed", "pending")


def delivery_chart(hours: list[tuple[datetime, dict[str, int]]]) -> dict[str, Any]:
    """Stacked bars of deliveries per hour, drawn as inline SVG markup by the template (no
    script: the page's Content-Security-Policy stays as it is)."""
    tallest = max((sum(counts.values()) for _, counts in hours), default=0)
    scale = CHART_HEIGHT / tallest if tallest else 0.0
    bars = []
    for index, (start, counts) in enumerate(hours):
        top = float(CHART_HEIGHT)
        for status in CHART_STATUSES:
            count = counts.get(status, 0)
            if count:
                height = count * scale
                top -= height
                bars.append({
                    "x": index * (BAR_WIDTH + BAR_GAP), "y": round(top, 2),
                    "height": round(height, 2), "status": status, "count": count,
                    "hour": start.strftime("%Y-%m-%d %H:00 UTC"),
                })  # fmt: skip
    return {
        "bars": bars, "tallest": tallest, "height": CHART_HEIGHT, "bar_width": BAR_WIDTH,
        "width": len(hours) * (BAR_WIDTH + BAR_GAP), "statuses": CHART_STATUSES,
        "first": hours[0][0] if hours else None,
        "total": {s: sum(c.get(s, 0) for _, c in hours) for s in CHART_STATUSES},
    }  # fmt: skip


@router.get("/{environment}/webhooks/{webhook_id}")
def webhook_page(
    request: Request,
    environment: auth.EnvironmentDep,
    signed_in: auth.OperatorDep,
    webhook_id: str,
    session: SessionDep,
    now: auth.NowDep,
    after: str | None = None,
    notice: str | None = None,
) -> Response:
    """The webhook and its delivery log, newest first."""
    webhook = service.webhook_public(
        service.get_webhook(session, environment_id=environment, webhook_id=webhook_id)
    )
    deliveries = service.list_deliveries(
        session, environment_id=environment, webhook_id=webhook_id, status=None,
        params=_page(request, DELIVERIES_PER_PAGE, after),
    )  # fmt: skip
    context = _context(
        signed_in, environment, now, webhook=webhook, deliveries=deliveries,
        first_page=after is None, notice=NOTICES.get(notice or ""),
    )  # fmt: skip
    return render(request, "webhook.html", context)


@router.post("/{environment}/webhooks/{webhook_id}/deliveries/{delivery_id}/replay")
def webhook_delivery_replay(
    environment: auth.EnvironmentDep,
    signed_in: auth.CheckedFormDep,
    webhook_id: str,
    delivery_id: str,
    session: SessionDep,
    settings: SettingsDep,
) -> Response:
    """Send the delivery's event again, as ``POST /v1/webhook/{id}/deliveries/{id}/replay``
    does (an inactive webhook's 409 shows as a page)."""
    service.replay_delivery(
        session, environment_id=environment, webhook_id=webhook_id, delivery_id=delivery_id,
        settings=settings,
    )  # fmt: skip
    return redirect(f"/console/{environment}/webhooks/{webhook_id}?notice=replayed")
