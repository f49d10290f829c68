"""/webhook: subscriptions, test events, the delivery log and replays.

The fixed paths (``/webhook/event-types``, ``/webhook/test``) are declared before
``/webhook/{webhook_id}`` so the path parameter never captures them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response, status

from platform_api.api.deps import CurrentPrincipal, SessionDep, SettingsDep
from platform_api.event_types import EVENT_TYPES
from platform_api.pagination import PageParamsDep
from platform_api.services import webhooks as service
from platform_api.tables.webhook import (
    DeliveryAccepted,
    EventTypePublic,
    WebhookCreate,
    WebhookCreated,
    WebhookPublic,
    WebhookTestRequest,
    WebhookUpdate,
)

router = APIRouter(tags=["Webhooks"])


@router.get("/webhook/event-types")
def list_webhook_event_types() -> dict[str, Any]:
    """Every event type a webhook can subscribe to (``entity:*`` matches a whole entity)."""
    result = [EventTypePublic(event_type=k, description=v) for k, v in EVENT_TYPES.items()]
    return {"result": [r.model_dump() for r in result], "next_cursor": None}


@router.post("/webhook/test", status_code=status.HTTP_202_ACCEPTED)
def send_webhook_test_event(
    body: WebhookTestRequest,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> DeliveryAccepted:
    """Send a ``webhook:test`` event to the webhook, whether or not it subscribes to it."""
    delivery = service.send_test(
        session, environment_id=principal.environment_id, webhook_id=body.id, settings=settings
    )
    return DeliveryAccepted(delivery_id=delivery.id)


@router.post("/webhook", status_code=status.HTTP_201_CREATED)
def create_webhook(
    body: WebhookCreate, session: SessionDep, principal: CurrentPrincipal, settings: SettingsDep
) -> WebhookCreated:
    """Create a webhook. The response carries the signing ``secret``; it is not shown again."""
    webhook, secret = service.create_webhook(
        session, environment_id=principal.environment_id, data=body, settings=settings
    )
    return WebhookCreated(**service.webhook_public(webhook).model_dump(), secret=secret)


@router.get("/webhook")
def list_webhooks(
    session: SessionDep, principal: CurrentPrincipal, page: PageParamsDep
) -> dict[str, Any]:
    return service.list_webhooks(session, environment_id=principal.environment_id, params=page)


@router.get("/webhook/{webhook_id}")
def get_webhook(webhook_id: str, session: SessionDep, principal: CurrentPrincipal) -> WebhookPublic:
    webhook = service.get_webhook(
        session, environment_id=principal.environment_id, webhook_id=webhook_id
    )
    return service.webhook_public(webhook)


@router.patch("/webhook/{webhook_id}")
def update_webhook(
    webhook_id: str,
    body: WebhookUpdate,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> WebhookPublic:
    webhook = service.update_webhook(
        session,
        environment_id=principal.environment_id,
        webhook_id=webhook_id,
        data=body,
        settings=settings,
    )
    return service.webhook_public(webhook)


@router.delete("/webhook/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_webhook(webhook_id: str, session: SessionDep, principal: CurrentPrincipal) -> Response:
    service.delete_webhook(session, environment_id=principal.environment_id, webhook_id=webhook_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/webhook/{webhook_id}/deliveries")
def list_webhook_deliveries(
    webhook_id: str,
    session: SessionDep,
    principal: CurrentPrincipal,
    page: PageParamsDep,
    status_filter: Annotated[
        Literal["pending", "succeeded", "failed"] | None,
        Query(alias="status", description="Only deliveries in this state."),
    ] = None,
) -> dict[str, Any]:
    """The delivery log, newest first: each event's attempts, state and next attempt time."""
    return service.list_deliveries(
        session,
        environment_id=principal.environment_id,
        webhook_id=webhook_id,
        status=status_filter,
        params=page,
    )


@router.post(
    "/webhook/{webhook_id}/deliveries/{delivery_id}/replay",
    status_code=status.HTTP_202_ACCEPTED,
)
def replay_webhook_delivery(
    webhook_id: str,
    delivery_id: str,
    session: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> DeliveryAccepted:
    """Send the delivery's event again, with the same ``webhook-id``."""
    delivery = service.replay_delivery(
        session,
        environment_id=principal.environment_id,
        webhook_id=webhook_id,
        delivery_id=delivery_id,
        settings=settings,
    )
    return DeliveryAccepted(delivery_id=delivery.id)
