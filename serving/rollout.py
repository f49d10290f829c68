"""Deploy the Serve config (the same file `serve deploy` takes) onto a Ray cluster.

``python -m serving.rollout`` (what ``switchyard run`` starts) joins RAY_ADDRESS, deploys the
config with this process's settings applied and exits 0 once the intent classifier answers,
non-zero if it fails to deploy.
"""

from __future__ import annotations

import copy
import logging
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import yaml

from core.log_config import configure_logging
from core.settings import Settings, get_settings
from serving.deploy_status import short_cause, what_to_do
from serving.protocol import APP_NAME, DEPLOYMENT_NAME
from serving.ray_connect import connect_ray

SERVE_CONFIG_PATH = Path(__file__).with_name("serve_config.yaml")


def load_serve_config(path: Path | None = None) -> dict[str, Any]:
    """The Serve config as a dict."""
    return yaml.safe_load((path or SERVE_CONFIG_PATH).read_text())


def _classifier_entry(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    # The config file holds one application: the classifier's (named by settings on deploy).
    (app,) = config["applications"]
    deployment = next(d for d in app["deployments"] if d["name"] == DEPLOYMENT_NAME)
    return app, deployment


def classifier_deployment_config(config: dict[str, Any]) -> dict[str, Any]:
    """The ``IntentClassifier`` entry of a Serve config (its knobs, replicas and resources)."""
    return _classifier_entry(config)[1]


def serve_config_for(
    settings: Settings, *, model_version: str | None = None, path: Path | None = None
) -> dict[str, Any]:
    """The Serve config with this process's settings applied (model location, knobs)."""
    config = copy.deepcopy(load_serve_config(path or settings.serve_config_path))
    app, deployment = _classifier_entry(config)
    app["name"] = settings.serve_app_name
    user_config = deployment.setdefault("user_config", {})
    if settings.model_dir is not None:
        model_dir = Path(settings.model_dir).resolve()
        app.setdefault("args", {})["models_root"] = str(model_dir.parent)
        user_config["model_version"] = model_dir.name
    else:
        app.setdefault("args", {})["models_root"] = str(Path(settings.models_root).resolve())
    if model_version is not None:
        user_config["model_version"] = model_version
    knobs = {
        "max_batch_size": settings.model_max_batch_size,
        "batch_wait_timeout_s": (
            None if settings.model_batch_wait_ms is None else settings.model_batch_wait_ms / 1000
        ),
        "intra_op_threads": settings.ort_intra_op_threads,
        "inter_op_threads": settings.ort_inter_op_threads,
        "allow_spinning": settings.ort_allow_spinning,
    }
    user_config.update({k: v for k, v in knobs.items() if v is not None})
    autoscaling = deployment.setdefault("autoscaling_config", {})
    if settings.model_min_replicas is not None:
        autoscaling["min_replicas"] = settings.model_min_replicas
    if settings.model_max_replicas is not None:
        autoscaling["max_replicas"] = settings.model_max_replicas
    return config


def served_model_version(config: dict[str, Any]) -> str | None:
    """The ``model_version`` a config asks for (None: models_root/LATEST)."""
    return _classifier_entry(config)[1].get("user_config", {}).get("model_version")


def shadow_app_name(app_name: str) -> str:
    """The Serve application a candidate model runs in beside ``app_name`` (shadow traffic)."""
    return f"{app_name}-shadow"


def shadow_serve_config(settings: Settings, model_version: str) -> dict[str, Any]:
    """The Serve config of ``model_version`` as the shadow of ``settings.serve_app_name``.

    The same file and settings as the served application, so the same knobs and
    ``ray_actor_options``; one replica (min = max = 1): it sees a sample of the traffic.
    """
    config = serve_config_for(settings, model_version=model_version)
    app, deployment = _classifier_entry(config)
    app["name"] = shadow_app_name(settings.serve_app_name)
    autoscaling = deployment.setdefault("autoscaling_config", {})
    autoscaling.update({"min_replicas": 1, "max_replicas": 1})
    autoscaling.pop("initial_replicas", None)
    return config


def _serve_client(config: dict[str, Any]) -> Any:
    from ray.serve._private.api import serve_start
    from ray.serve.schema import ServeDeploySchema

    schema = ServeDeploySchema.model_validate(config)
    return serve_start(
        http_options=schema.http_options.model_dump(),
        grpc_options=schema.grpc_options.model_dump(),
        proxy_location=schema.proxy_location,
        global_logging_config=schema.logging_config,
    )


def _deployed_configs(client: Any, names: list[str]) -> list[dict[str, Any]]:
    """The configs the named applications were deployed with, for those deployed and not
    being deleted."""
    applications = client.get_serve_details().get("applications", {})
    configs = []
    for name in names:
        details = applications.get(name) or {}
        config = details.get("deployed_app_config")
        if config and details.get("status") != "DELETING":
            configs.append(config)
    return configs


def deploy(config: dict[str, Any], *, timeout_s: float = 180.0) -> str:
    """Apply ``config`` to the connected cluster; return the served version once it answers.

    This is what ``serve run <config>`` does: config-deployed applications keep their code
    version, so a change of ``user_config`` alone (a model switch) reconfigures replicas in
    place instead of replacing them. ``serve deploy`` needs the dashboard; this does not.
    As with ``serve deploy``, config-deployed applications the config does not name are
    removed, except the application's running shadow (``switchyard model shadow``), which is
    kept as deployed: a model switch or a restart does not end a shadow.
    """
    from ray.serve.schema import ServeDeploySchema

    client = _serve_client(config)
    app_name = _classifier_entry(config)[0]["name"]
    kept = _deployed_configs(client, [shadow_app_name(app_name)])
    client.deploy_apps(
        ServeDeploySchema.model_validate(
            {**config, "applications": [*config["applications"], *kept]}
        )
    )
    return wait_until_serving(served_model_version(config), app_name=app_name, timeout_s=timeout_s)


def deploy_shadow(settings: Settings, model_version: str, *, timeout_s: float = 180.0) -> str:
    """Run ``model_version`` as the shadow of the served application, which stays exactly as
    deployed; returns the version once the shadow answers."""
    from ray.serve.schema import ServeDeploySchema

    config = shadow_serve_config(settings, model_version)
    client = _serve_client(config)
    served = _deployed_configs(client, [settings.serve_app_name])
    if not served:
        raise RuntimeError(f"no application {settings.serve_app_name!r} to shadow is deployed")
    shadow = _classifier_entry(config)[0]
    client.deploy_apps(
        ServeDeploySchema.model_validate({**config, "applications": [*served, shadow]})
    )
    return wait_until_serving(model_version, app_name=shadow["name"], timeout_s=timeout_s)


def remove_shadow(settings: Settings) -> bool:
    """Delete the served application's shadow; False when there was none."""
    from ray import serve

    name = shadow_app_name(settings.serve_app_name)
    if name not in serve.status().applications:
        return False
    serve.delete(name)
    return True


def wait_until_serving(
    model_version: str | None, *, app_name: str = APP_NAME, timeout_s: float = 180.0
) -> str:
    """Block until the application is RUNNING and (when given) serves ``model_version``."""
    from ray import serve

    deadline = time.monotonic() + timeout_s
    # The controller applies a config on its next loop; give it a moment to notice the change.
    time.sleep(0.5)
    last_status = "unknown"
    while time.monotonic() < deadline:
        app_status = serve.status().applications.get(app_name)
        if app_status is not None:
            last_status = str(app_status.status)
            if app_status.status == "DEPLOY_FAILED":
                raise RuntimeError(f"deploying {app_name} failed: {app_status.message}")
            if app_status.status == "RUNNING":
                handle = serve.get_deployment_handle(DEPLOYMENT_NAME, app_name=app_name)
                # Several answers, since any replica may answer while others still switch.
                served = {handle.model_version.remote().result(timeout_s=30) for _ in range(4)}
                if len(served) == 1 and (model_version is None or model_version in served):
                    return served.pop()
        time.sleep(0.5)
    raise TimeoutError(f"{app_name} not serving after {timeout_s:.0f}s (status {last_status})")


def forget_missing_shadow(settings: Settings) -> bool:
    """Delete the shadow record when its application is not deployed; True if it did.

    A new local cluster (``switchyard run`` again) starts without the shadow application while
    Redis keeps the record: fronts would copy to nothing. Only with REDIS_URL set (as
    ``switchyard run`` sets it for its children): this never starts an embedded Redis.
    """
    from ray import serve

    from serving.shadow import delete_record, read_record

    if not settings.redis_url:
        return False
    import redis

    client = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=5, socket_timeout=5)
    try:
        record = read_record(client)
        if record is None or record.app in serve.status().applications:
            return False
        delete_record(client)
        return True
    finally:
        client.close()


def _report_failure(error: Exception, log_path: Path) -> None:
    """One line on the console (the cause, what to do); the whole error in ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text("".join(traceback.format_exception(error)))
    cause = short_cause(str(error)) if str(error) else type(error).__name__
    print(
        f"model deployment failed: {cause}\n  {what_to_do(cause)} (full error: {log_path})",
        file=sys.stderr,
        flush=True,
    )


def main() -> int:
    settings = get_settings()
    configure_logging(settings.log_level, json=settings.log_json)
    log = logging.getLogger("serving.rollout")
    try:
        connect_ray(settings.ray_address)
        version = deploy(serve_config_for(settings))
    except Exception as error:
        _report_failure(error, settings.var_dir / "logs" / "model-deploy.log")
        return 1
    # Like a failure, the outcome is one line on the console whatever the log level.
    print(f"intent classifier serving model {version}", file=sys.stderr, flush=True)
    try:
        if forget_missing_shadow(settings):
            log.warning("shadow traffic stopped: its application is no longer deployed")
    except Exception:  # the classifier is serving; a stale record only costs the fronts errors
        log.warning("the shadow record could not be checked", exc_info=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
