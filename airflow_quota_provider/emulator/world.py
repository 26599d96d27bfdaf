"""The emulated account with the parts that move it: what every operation is given.

The account's state is its :meth:`World.tables` (each noting the records
reached, :mod:`.tables`), ``store.last_submitted`` and ``now``
(:mod:`.account`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_quota_provider.emulator.account import Account
from airflow_quota_provider.emulator.arns import Arns
from airflow_quota_provider.emulator.clock import EmulatedClock
from airflow_quota_provider.emulator.dispatch import Dispatcher
from airflow_quota_provider.emulator.faults import Faults
from airflow_quota_provider.emulator.tables import Table
from airflow_quota_provider.emulator.training import TrainingRuntime

MAX_TIMERS_PER_CATCH_UP = 1_000_000
"""More timers than this in one catch-up means a timer keeps re-arming itself at once."""


class World(Account):
    def __init__(
        self,
        clock: EmulatedClock,
        arns: Arns,
        instance_limits: Mapping[str, int] | None = None,
        faults: Faults | None = None,
    ) -> None:
        super().__init__(clock, arns, instance_limits, faults)
        self.fired = 0
        """Timers fired so far: a request that fired none and changed nothing needs no save."""
        self.training = TrainingRuntime(self)
        self.dispatcher = Dispatcher(self, self.training)
        self.training.on_change = self.dispatcher.training_changed

    def tables(self) -> dict[str, Table[Any]]:
        """Every table the account's state is made of, by the kind of record it holds."""
        store = self.store
        return {
            "environment": store.environments,
            "policy": store.policies,
            "queue": store.queues,
            "share": store.shares,
            "job": store.jobs,
            "training-job": store.training_jobs,
            "client-token": store.client_tokens,
            "checkpoint": store.checkpoints,
            "placement": self.dispatcher.placements,
            "timer": self.timers.pending,
        }

    def drain_reached(self) -> dict[str, set[str]]:
        """The keys of each kind reached since the last drain: all that changed, and more."""
        return {kind: table.drain() for kind, table in self.tables().items()}

    def catch_up(self) -> None:
        """Fire every timer due by the clock's time, each at its own time, then settle."""
        target = max(self.now, self.clock.now())
        for _ in range(MAX_TIMERS_PER_CATCH_UP):
            due = self.timers.next_due()
            if due is None or due > target:
                break
            due, timer = self.timers.pop()
            self.now = max(self.now, due)
            self.fired += 1
            self.timers.fire(timer)
            if self.timers.next_due() != due:
                self.dispatcher.settle()
        else:
            raise RuntimeError("timers keep firing at the same instant")
        self.now = target
        self.dispatcher.settle()
