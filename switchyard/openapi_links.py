"""OpenAPI links: which operation's answer gives the id another operation takes.

A client (or schemathesis's stateful phase) follows them from a create or a list to the
operations on the record: ``POST /v1/webhook`` → ``GET``/``PATCH``/``DELETE
/v1/webhook/{webhook_id}``, and so on. They are declared once, as data (``FEEDS``: where a
value comes from, and which operations take it), plus one rule for the unified API, whose
routes come from the integration manifests (a record's id comes from its collection's create
and list). ``add_links`` refuses a link naming an operation or a parameter the document does
not have, so the table cannot rot silently: the app fails at its first ``/openapi.json``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

HTTP_METHODS = {"get", "post", "put", "patch", "delete"}
LOCATIONS = {"path", "query", "body"}
UNIFIED_PREFIX = "/v1/unified/"
# The unified record's id in its operations' paths, and the account the record lives in.
UNIFIED_RECORD_PARAMETER = "record_id"
UNIFIED_ACCOUNT = "query.integrated_account_id"

FIRST_LISTED = "$response.body#/result/0/id"
CREATED = "$response.body#/id"


@dataclass(frozen=True)
class Feed:
    """A value ``into`` the ``targets`` (``path.x``, ``query.x`` or ``body.x``), taken from the
    success response (or request) of each ``sources`` operation by a runtime expression."""

    into: str
    sources: Mapping[str, str]
    targets: tuple[str, ...]


def _fed(into: str, targets: tuple[str, ...], **sources: str) -> Feed:
    return Feed(into, sources, targets)


WEBHOOK = ("get_webhook", "update_webhook", "delete_webhook", "list_webhook_deliveries")
FEEDS: tuple[Feed, ...] = (
    # Webhooks, their test events and the deliveries those leave in the log.
    _fed("path.webhook_id", WEBHOOK, create_webhook=CREATED, list_webhooks=FIRST_LISTED),
    _fed("body.id", ("send_webhook_test_event",),
         create_webhook=CREATED, list_webhooks=FIRST_LISTED),
    _fed("path.webhook_id", ("replay_webhook_delivery",),
         send_webhook_test_event="$request.body#/id",
         list_webhook_deliveries="$request.path.webhook_id"),
    _fed("path.delivery_id", ("replay_webhook_delivery",),
         send_webhook_test_event="$response.body#/delivery_id",
         list_webhook_deliveries=FIRST_LISTED),
    _fed("body.webhook_id", ("create_sync_job_run", "create_sync_job_cron_trigger"),
         create_webhook=CREATED),
    # Installed integrations.
    _fed("path.integration_id", ("get_installed_integration", "update_installed_integration"),
         install_integration=CREATED, list_installed_integrations=FIRST_LISTED),
    # Link tokens open the connect page, whose connection is an integrated account.
    _fed("query.link_token", ("get_connect_session",),
         create_link_token="$response.body#/link_token"),
    _fed("body.link_token", ("connect_account",),
         create_link_token="$response.body#/link_token"),
    _fed("path.account_id",
         ("get_integrated_account", "update_integrated_account", "delete_integrated_account"),
         connect_account="$response.body#/integrated_account_id",
         list_integrated_accounts=FIRST_LISTED),
    _fed("body.integrated_account_id", ("create_link_token",),
         connect_account="$response.body#/integrated_account_id"),
    # Sync jobs, their runs and cron triggers.
    _fed("path.job_id", ("get_sync_job", "delete_sync_job"),
         create_sync_job=CREATED, list_sync_jobs=FIRST_LISTED),
    _fed("body.sync_job_id", ("create_sync_job_run", "create_sync_job_cron_trigger"),
         create_sync_job=CREATED, list_sync_jobs=FIRST_LISTED),
    _fed("query.sync_job_id", ("list_sync_job_runs",), create_sync_job=CREATED),
    _fed("path.run_id", ("get_sync_job_run", "stop_sync_job_run"),
         create_sync_job_run=CREATED, list_sync_job_runs=FIRST_LISTED),
    _fed("path.trigger_id", ("get_sync_job_cron_trigger", "delete_sync_job_cron_trigger"),
         create_sync_job_cron_trigger=CREATED, list_sync_job_cron_triggers=FIRST_LISTED),
    # Returns copied by sync runs, read from the cache of the same account.
    _fed("path.return_id", ("get_cached_return",), list_cached_returns=FIRST_LISTED),
    _fed("query.integrated_account_id", ("get_cached_return",),
         list_cached_returns="$request.query.integrated_account_id"),
)  # fmt: skip

# Path parameters no response supplies, with the reason.
UNFED_PATH_PARAMETERS = {
    ("proxy_get", "resource_path"): "the provider's own API path, not an id this API issues",
    ("proxy_post", "resource_path"): "the provider's own API path, not an id this API issues",
    ("proxy_put", "resource_path"): "the provider's own API path, not an id this API issues",
    ("proxy_patch", "resource_path"): "the provider's own API path, not an id this API issues",
    ("proxy_delete", "resource_path"): "the provider's own API path, not an id this API issues",
}


class LinkError(ValueError):
    """A link names an operation, a parameter or a response the document does not have."""


@dataclass
class _Link:
    parameters: dict[str, str] = field(default_factory=dict)
    body: dict[str, str] = field(default_factory=dict)


def _operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in schema.get("paths", {}).items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                yield path, method, operation


def unified_feeds(schema: dict[str, Any]) -> list[Feed]:
    """A unified record's id comes from its collection's create (``id``) and list (the first
    ``result``'s), and the record is read in the account the create or list named."""
    by_path: dict[str, dict[str, str]] = {}
    for path, method, operation in _operations(schema):
        if path.startswith(UNIFIED_PREFIX):
            by_path.setdefault(path, {})[method] = operation["operationId"]
    feeds = []
    record_suffix = "/{" + UNIFIED_RECORD_PARAMETER + "}"
    for path, methods in by_path.items():
        if not path.endswith(record_suffix):
            continue
        collection = path.removesuffix(record_suffix)
        sources = {}
        for other, others in by_path.items():
            # The collection itself, and its custom lists (``/returns:awaiting_receipt``).
            if other == collection and "post" in others:
                sources[others["post"]] = CREATED
            if other.split(":")[0] == collection and "get" in others:
                sources[others["get"]] = FIRST_LISTED
        targets = tuple(methods.values())
        feeds.append(Feed(f"path.{UNIFIED_RECORD_PARAMETER}", sources, targets))
        account = {source: f"$request.{UNIFIED_ACCOUNT}" for source in sources}
        feeds.append(Feed(UNIFIED_ACCOUNT, account, targets))
    return feeds


def _success_status(operation: dict[str, Any], operation_id: str) -> str:
    statuses = sorted(s for s in operation.get("responses", {}) if s.startswith("2"))
    if not statuses:
        raise LinkError(f"link source {operation_id} has no success response")
    return statuses[0]


def _check_target(into: str, target: dict[str, Any], target_id: str) -> None:
    location, _, name = into.partition(".")
    if location not in LOCATIONS or not name:
        raise LinkError(f"link into {into!r} of {target_id}: not path.<name>, query.… or body.…")
    if location == "body":
        if "requestBody" not in target:
            raise LinkError(f"link into {into} of {target_id}: the operation takes no body")
        return
    names = {(p.get("in"), p.get("name")) for p in target.get("parameters", [])}
    if (location, name) not in names:
        raise LinkError(f"link into {into} of {target_id}: no such parameter")


def _check_source(expression: str, source: dict[str, Any], source_id: str) -> None:
    if not expression.startswith(("$response.body#/", "$request.")):
        raise LinkError(f"link from {source_id}: unsupported expression {expression!r}")
    if expression.startswith("$request.") and not expression.startswith("$request.body#"):
        location, _, name = expression.removeprefix("$request.").partition(".")
        names = {(p.get("in"), p.get("name")) for p in source.get("parameters", [])}
        if (location, name) not in names:
            raise LinkError(f"link from {source_id}: {expression} names no parameter of it")
    elif expression.startswith("$request.body#") and "requestBody" not in source:
        raise LinkError(f"link from {source_id}: {expression}, but it takes no body")


def build_links(
    schema: dict[str, Any], feeds: tuple[Feed, ...] | list[Feed]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The link objects, by (source operationId, target operationId); ``LinkError`` if a feed
    names an operation, parameter or response the document lacks."""
    by_id = {op["operationId"]: op for _path, _method, op in _operations(schema)}
    links: dict[tuple[str, str], _Link] = {}
    for feed in feeds:
        for target_id in feed.targets:
            if target_id not in by_id:
                raise LinkError(f"link target {target_id}: no such operationId")
            _check_target(feed.into, by_id[target_id], target_id)
            for source_id, expression in feed.sources.items():
                if source_id not in by_id:
                    raise LinkError(f"link source {source_id}: no such operationId")
                _check_source(expression, by_id[source_id], source_id)
                _success_status(by_id[source_id], source_id)
                link = links.setdefault((source_id, target_id), _Link())
                location, _, name = feed.into.partition(".")
                if location == "body":
                    link.body[name] = expression
                else:
                    link.parameters[feed.into] = expression
    result = {}
    for key, link in links.items():
        definition: dict[str, Any] = {"operationId": key[1]}
        if link.parameters:
            definition["parameters"] = link.parameters
        if link.body:
            definition["requestBody"] = link.body
        result[key] = definition
    return result


def add_links(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each link on its source's (first) success response."""
    feeds = [*FEEDS, *unified_feeds(schema)]
    by_id = {op["operationId"]: op for _path, _method, op in _operations(schema)}
    for (source_id, target_id), definition in build_links(schema, feeds).items():
        source = by_id[source_id]
        response = source["responses"][_success_status(source, source_id)]
        response.setdefault("links", {})[target_id] = definition
    return schema
