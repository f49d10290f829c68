"""``WarmFirstRouter``: which replica gets a front's model call (Serve's request-router API).

Serve's default router picks two replicas at random and sends to the less busy one. With the
fronts' calls spread that way, a lone request finds a replica whose caches went cold while the
other one ran: the same batch-1 model run measured 1.8 ms on a replica called every time and
2.2-2.5 ms on replicas called in turn (benchmarks/RESULTS.md's git history). This router
sends a call to the replica with the fewest calls under way and, among idle ones, to the one
used last, so light traffic stays on one warm replica and load still spreads as soon as a
replica is busy.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import deque
from typing import Any

from ray.serve.request_router import (
    FIFOMixin,
    PendingRequest,
    ReplicaID,
    RequestRouter,
    RunningReplica,
)

__all__ = ["WarmFirstRouter"]


# A call is chosen a replica, then sent a moment later (the caller resumes first); a choice
# not followed by a send within this long no longer counts (the call was retried elsewhere).
RESERVATION_S = 0.1


class WarmFirstRouter(FIFOMixin, RequestRouter):
    """Fewest calls under way first; among idle replicas, the one that ran most recently."""

    def initialize_state(self, **kwargs: Any) -> None:
        self._last_used: dict[ReplicaID, int] = {}
        self._clock = itertools.count(1)
        # Calls chosen for a replica but not sent yet: two calls routed back to back must not
        # both see the same idle replica.
        self._reserved: dict[ReplicaID, deque[float]] = {}

    async def choose_replicas(
        self,
        candidate_replicas: list[RunningReplica],
        pending_request: PendingRequest | None = None,
    ) -> list[list[RunningReplica]]:
        """Every candidate as its own rank, best first; Serve sends to the first rank whose
        replica accepts the call (a full replica is skipped, an unknown count is probed)."""
        now = time.monotonic()
        queue_lengths = self.replica_queue_len_cache

        def preference(replica: RunningReplica) -> tuple[int, float]:
            replica_id = replica.replica_id
            ongoing = (queue_lengths.get(replica_id) or 0) + self._pending(replica_id, now)
            if ongoing == 0:
                return (0, -self._last_used.get(replica_id, 0))
            # Busy replicas with equal counts: at random, as Serve's default router. A count
            # can lag a call that just finished, and a fixed order would then keep sending
            # to the replica that is still busy.
            return (ongoing, random.random())

        ranked = sorted(candidate_replicas, key=preference)
        if ranked:
            self._reserved.setdefault(ranked[0].replica_id, deque()).append(now)
        return [[replica] for replica in ranked]

    def on_send_request(self, replica_id: ReplicaID) -> None:
        super().on_send_request(replica_id)
        reserved = self._reserved.get(replica_id)
        if reserved:
            reserved.popleft()
        self._last_used[replica_id] = next(self._clock)
        # Forget replicas that are gone, so the tables never outgrow the deployment.
        if len(self._last_used) > 4 * max(1, len(self.curr_replicas)):
            live = set(self.curr_replicas)
            self._last_used = {k: v for k, v in self._last_used.items() if k in live}
            self._reserved = {k: v for k, v in self._reserved.items() if k in live}

    def _pending(self, replica_id: ReplicaID, now: float) -> int:
        reserved = self._reserved.get(replica_id)
        if not reserved:
            return 0
        while reserved and now - reserved[0] > RESERVATION_S:
            reserved.popleft()
        return len(reserved)
