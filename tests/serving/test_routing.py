"""The deployment's request router on a real Serve: light traffic on one replica, load on all."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from ray import serve
from ray.serve.handle import DeploymentHandle

from serving.rollout import classifier_deployment_config, load_serve_config

pytestmark = [pytest.mark.slow]

APP = "routing-probe"


@serve.deployment
class WhoAmI:
    async def whoami(self, delay_s: float) -> str:
        await asyncio.sleep(delay_s)
        return serve.get_replica_context().replica_id.unique_id


@pytest.fixture
def probe(serve_app: str) -> Iterator[DeploymentHandle]:
    """Two replicas behind the router the shipped Serve config names."""
    router = classifier_deployment_config(load_serve_config())["request_router_config"]
    app = WhoAmI.options(  # type: ignore[attr-defined]  # mypy skips the @serve.deployment class decorator
        num_replicas=2, ray_actor_options={"num_cpus": 0.1}, request_router_config=router
    ).bind()
    handle = serve.run(app, name=APP, route_prefix=None)
    yield handle
    serve.delete(APP)


def test_one_client_stays_on_one_replica_and_concurrent_calls_spread(
    probe: DeploymentHandle,
) -> None:
    handle = probe.options(_by_reference=False)

    async def scenario() -> tuple[list[str], list[str]]:
        one_by_one = [await handle.whoami.remote(0) for _ in range(20)]
        together = await asyncio.gather(*(handle.whoami.remote(0.3) for _ in range(2)))
        return one_by_one, list(together)

    one_by_one, together = asyncio.run(scenario())
    # Serve's default router alternates at random: 20 calls in a row on one replica would
    # happen about once in half a million runs.
    assert len(set(one_by_one)) == 1
    assert len(set(together)) == 2
