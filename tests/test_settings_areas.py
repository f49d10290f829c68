"""``Settings`` is grouped by area (``core.settings.AREAS``) without changing what it reads.

Every field belongs to exactly one area, the areas together are ``Settings``' fields, and each
field keeps the environment variables it had as one flat class (recorded below from that
class); the values read from the environment and given as keyword arguments, and the
properties computed from them, are those of the flat class.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from pydantic_settings import EnvSettingsSource

from core.settings import AREAS, REPO_ROOT, Settings
from core.settings_doc import env_names, markdown_table

# Field -> the environment variables that set it, as the flat Settings class read them.
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "var_dir": ("SWITCHYARD_VAR_DIR",),
    "database_url": ("DATABASE_URL", "SWITCHYARD_DATABASE_URL"),
    "redis_url": ("REDIS_URL", "SWITCHYARD_REDIS_URL"),
    "redis_timeout_s": ("SWITCHYARD_REDIS_TIMEOUT_S",),
    "redis_breaker_cooldown_s": ("SWITCHYARD_REDIS_BREAKER_COOLDOWN_S",),
    "ray_address": ("RAY_ADDRESS", "SWITCHYARD_RAY_ADDRESS"),
    "host": ("SWITCHYARD_HOST",),
    "port": ("SWITCHYARD_PORT",),
    "http_workers": ("SWITCHYARD_HTTP_WORKERS",),
    "dashboard_port": ("SWITCHYARD_DASHBOARD_PORT",),
    "public_base_url": ("SWITCHYARD_PUBLIC_BASE_URL",),
    "encryption_key": ("SWITCHYARD_ENCRYPTION_KEY",),
    "link_token_ttl_seconds": ("SWITCHYARD_LINK_TOKEN_TTL_SECONDS",),
    "sandbox_url": ("SWITCHYARD_SANDBOX_URL",),
    "auth_cache_seconds": ("SWITCHYARD_AUTH_CACHE_SECONDS",),
    "auth_local_cache_s": ("SWITCHYARD_AUTH_LOCAL_CACHE_S",),
    "console_session_hours": ("SWITCHYARD_CONSOLE_SESSION_HOURS",),
    "model_dir": ("SWITCHYARD_MODEL_DIR",),
    "models_root": ("SWITCHYARD_MODELS_ROOT",),
    "serve_config_path": ("SWITCHYARD_SERVE_CONFIG_PATH",),
    "serve_app_name": ("SWITCHYARD_SERVE_APP_NAME",),
    "inference_batch_max_messages": ("SWITCHYARD_INFERENCE_BATCH_MAX_MESSAGES",),
    "inference_batch_wait_ms": ("SWITCHYARD_INFERENCE_BATCH_WAIT_MS",),
    "inference_max_inflight_calls": ("SWITCHYARD_INFERENCE_MAX_INFLIGHT_CALLS",),
    "inference_max_queued_messages": ("SWITCHYARD_INFERENCE_MAX_QUEUED_MESSAGES",),
    "inference_timeout_s": ("SWITCHYARD_INFERENCE_TIMEOUT_S",),
    "inference_rate_limit_per_minute": ("SWITCHYARD_INFERENCE_RATE_LIMIT_PER_MINUTE",),
    "inference_rate_limit_by_environment": ("SWITCHYARD_INFERENCE_RATE_LIMIT_BY_ENVIRONMENT",),
    "inference_shadow_sample_rate": ("SWITCHYARD_INFERENCE_SHADOW_SAMPLE_RATE",),
    "inference_shadow_follow": ("SWITCHYARD_INFERENCE_SHADOW_FOLLOW",),
    "model_max_batch_size": ("SWITCHYARD_MODEL_MAX_BATCH_SIZE",),
    "model_batch_wait_ms": ("SWITCHYARD_MODEL_BATCH_WAIT_MS",),
    "ort_intra_op_threads": ("SWITCHYARD_ORT_INTRA_OP_THREADS",),
    "ort_inter_op_threads": ("SWITCHYARD_ORT_INTER_OP_THREADS",),
    "ort_allow_spinning": ("SWITCHYARD_ORT_ALLOW_SPINNING",),
    "model_min_replicas": ("SWITCHYARD_MODEL_MIN_REPLICAS",),
    "model_max_replicas": ("SWITCHYARD_MODEL_MAX_REPLICAS",),
    "sandbox_host": ("SWITCHYARD_SANDBOX_HOST",),
    "sandbox_port": ("SWITCHYARD_SANDBOX_PORT",),
    "upstream_timeout_s": ("SWITCHYARD_UPSTREAM_TIMEOUT_S",),
    "upstream_connect_timeout_s": ("SWITCHYARD_UPSTREAM_CONNECT_TIMEOUT_S",),
    "upstream_max_connections": ("SWITCHYARD_UPSTREAM_MAX_CONNECTIONS",),
    "unified_connection_cache_s": ("SWITCHYARD_UNIFIED_CONNECTION_CACHE_S",),
    "shutdown_grace_s": ("SWITCHYARD_SHUTDOWN_GRACE_S",),
    "sync_run_stale_s": ("SWITCHYARD_SYNC_RUN_STALE_S",),
    "sync_rate_limit_max_waits": ("SWITCHYARD_SYNC_RATE_LIMIT_MAX_WAITS",),
    "sync_retry_after_max_s": ("SWITCHYARD_SYNC_RETRY_AFTER_MAX_S",),
    "sync_heartbeat_interval_s": ("SWITCHYARD_SYNC_HEARTBEAT_INTERVAL_S",),
    "sync_cron_min_interval_s": ("SWITCHYARD_SYNC_CRON_MIN_INTERVAL_S",),
    "sync_max_runs_per_environment": ("SWITCHYARD_SYNC_MAX_RUNS_PER_ENVIRONMENT",),
    "workers_webhooks": ("SWITCHYARD_WORKERS_WEBHOOKS",),
    "workers_sync": ("SWITCHYARD_WORKERS_SYNC",),
    "workers_housekeeping": ("SWITCHYARD_WORKERS_HOUSEKEEPING",),
    "retention_api_log_days": ("SWITCHYARD_RETENTION_API_LOG_DAYS",),
    "retention_outbox_days": ("SWITCHYARD_RETENTION_OUTBOX_DAYS",),
    "retention_attempt_days": ("SWITCHYARD_RETENTION_ATTEMPT_DAYS",),
    "retention_link_token_days": ("SWITCHYARD_RETENTION_LINK_TOKEN_DAYS",),
    "api_log_flush_interval_s": ("SWITCHYARD_API_LOG_FLUSH_INTERVAL_S",),
    "api_log_queue_max": ("SWITCHYARD_API_LOG_QUEUE_MAX",),
    "upstream_max_retries": ("SWITCHYARD_UPSTREAM_MAX_RETRIES",),
    "upstream_retry_max_sleep_s": ("SWITCHYARD_UPSTREAM_RETRY_MAX_SLEEP_S",),
    "upstream_retry_default_s": ("SWITCHYARD_UPSTREAM_RETRY_DEFAULT_S",),
    "webhook_retry_schedule": ("SWITCHYARD_WEBHOOK_RETRY_SCHEDULE",),
    "webhook_retry_jitter": ("SWITCHYARD_WEBHOOK_RETRY_JITTER",),
    "webhook_timeout_seconds": ("SWITCHYARD_WEBHOOK_TIMEOUT_SECONDS",),
    "webhook_max_retry_after_seconds": ("SWITCHYARD_WEBHOOK_MAX_RETRY_AFTER_SECONDS",),
    "webhook_allowed_hosts": ("SWITCHYARD_WEBHOOK_ALLOWED_HOSTS",),
    "webhook_disable_after_exhausted": ("SWITCHYARD_WEBHOOK_DISABLE_AFTER_EXHAUSTED",),
    "webhook_dispatch_interval_seconds": ("SWITCHYARD_WEBHOOK_DISPATCH_INTERVAL_SECONDS",),
    "webhook_requeue_grace_seconds": ("SWITCHYARD_WEBHOOK_REQUEUE_GRACE_SECONDS",),
    "webhook_batch_size": ("SWITCHYARD_WEBHOOK_BATCH_SIZE",),
    "webhook_send_concurrency": ("SWITCHYARD_WEBHOOK_SEND_CONCURRENCY",),
    "mode": ("SWITCHYARD_MODE",),
    "outbound_allowed_hosts": ("SWITCHYARD_OUTBOUND_ALLOWED_HOSTS",),
    "egress_allow_only": ("SWITCHYARD_EGRESS_ALLOW_ONLY",),
    "max_request_body_bytes": ("SWITCHYARD_MAX_REQUEST_BODY_BYTES",),
    "max_json_depth": ("SWITCHYARD_MAX_JSON_DEPTH",),
    "upstream_max_response_bytes": ("SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES",),
    "metrics_token": ("SWITCHYARD_METRICS_TOKEN",),
    "log_level": ("SWITCHYARD_LOG_LEVEL",),
    "log_json": ("SWITCHYARD_LOG_JSON",),
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No variable Settings reads is set (the session's test environment sets some)."""
    for key in list(os.environ):
        upper = key.upper()
        if upper.startswith("SWITCHYARD_") or upper in {"DATABASE_URL", "REDIS_URL", "RAY_ADDRESS"}:
            monkeypatch.delenv(key)
    return monkeypatch


def test_every_field_belongs_to_exactly_one_area() -> None:
    owners = Counter(name for area in AREAS for name in area.model_fields)
    assert {name: count for name, count in owners.items() if count != 1} == {}
    assert len({area.area for area in AREAS}) == len(AREAS)


def test_the_areas_together_are_the_fields_of_settings_in_their_order() -> None:
    assert all(issubclass(Settings, area) for area in AREAS)
    assert [name for area in AREAS for name in area.model_fields] == list(Settings.model_fields)


def test_every_field_keeps_its_environment_variables() -> None:
    assert set(Settings.model_fields) == set(ENV_NAMES)
    documented = {name: tuple(env_names(name, f)) for name, f in Settings.model_fields.items()}
    assert documented == ENV_NAMES


@pytest.mark.parametrize(
    ("name", "variable"), [(name, var) for name, names in ENV_NAMES.items() for var in names]
)
def test_pydantic_settings_reads_each_variable_into_its_field(
    clean_env: pytest.MonkeyPatch, name: str, variable: str
) -> None:
    clean_env.setenv(variable, "[]")  # JSON, so list and mapping fields decode it too
    found = EnvSettingsSource(Settings)()
    alias = Settings.model_fields[name].validation_alias
    keys = {name, *getattr(alias, "choices", ())}
    assert len(found) == 1 and set(found) <= keys, found


def test_defaults_under_an_empty_environment(clean_env: pytest.MonkeyPatch) -> None:
    settings = Settings()
    assert settings.var_dir == REPO_ROOT / "var"
    assert settings.resolved_database_url == f"sqlite:///{REPO_ROOT / 'var' / 'switchyard.db'}"
    assert settings.base_url == "http://127.0.0.1:8000"
    assert settings.resolved_sandbox_url == "http://127.0.0.1:8010"
    assert settings.resolved_outbound_allowed_hosts == ["127.0.0.1:8010"]
    assert settings.model_dump() == {
        name: field.get_default(call_default_factory=True)
        for name, field in Settings.model_fields.items()
    }


def test_values_from_the_environment_reach_every_area(clean_env: pytest.MonkeyPatch) -> None:
    for variable, value in {
        "SWITCHYARD_WEBHOOK_ALLOWED_HOSTS": '["127.0.0.1"]',
        "DATABASE_URL": "postgres://u:p@db:5432/x",
        "SWITCHYARD_REDIS_URL": "redis://r:6379/1",
        "SWITCHYARD_MODE": "production",
        "SWITCHYARD_ENCRYPTION_KEY": "key",
        "SWITCHYARD_INFERENCE_BATCH_WAIT_MS": "2.5",
        "SWITCHYARD_INFERENCE_RATE_LIMIT_BY_ENVIRONMENT": '{"development": 600}',
        "SWITCHYARD_UPSTREAM_MAX_RETRIES": "7",
        "SWITCHYARD_RETENTION_OUTBOX_DAYS": "3",
        "SWITCHYARD_LOG_JSON": "false",
    }.items():
        clean_env.setenv(variable, value)
    settings = Settings()
    assert settings.webhook_allowed_hosts == ["127.0.0.1"]
    assert settings.resolved_database_url == "postgresql://u:p@db:5432/x"
    assert settings.redis_url == "redis://r:6379/1"
    assert settings.mode == "production"
    assert settings.resolved_outbound_allowed_hosts == []
    assert settings.encryption_key == "key"
    assert settings.inference_batch_wait_ms == 2.5
    assert settings.inference_rate_limit_by_environment == {"development": 600}
    assert settings.upstream_max_retries == 7
    assert settings.retention_outbox_days == 3
    assert settings.log_json is False
    assert "key" not in repr(settings) and "postgres" not in repr(settings)


def test_keyword_arguments_win_over_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("DATABASE_URL", "sqlite:///env.db")
    clean_env.setenv("SWITCHYARD_PORT", "9001")
    settings = Settings(database_url="sqlite:///k.db", port=1234, sandbox_url="http://sb:1/x/")
    assert (settings.database_url, settings.port) == ("sqlite:///k.db", 1234)
    assert settings.base_url == "http://127.0.0.1:1234"
    assert settings.resolved_outbound_allowed_hosts == ["sb:1"]
    with pytest.raises(ValueError, match="webhook_timeout_seconds"):
        Settings(webhook_timeout_seconds=0)


def test_the_table_shows_each_setting_under_its_area() -> None:
    area_of: dict[str, str] = {}
    heading = ""
    for row in markdown_table().splitlines()[2:]:
        first = row.split("|")[1].strip()
        if first.startswith("**"):
            heading = first.strip("*")
        else:
            area_of[first.strip("`")] = heading
    assert area_of == {
        ENV_NAMES[name][0]: area.area for area in AREAS for name in area.model_fields
    }
