"""The pool manager's hook that records its fleet's usage history at each cycle.

Each cycle it figures the fleet from the task instances the cycle read
(:mod:`~airflow_quota_provider.airflow_pools.cycle_history`), compares them with the
figures last recorded and writes only the keys that changed, with the tries that
started, and notes the history known until the cycle
(:class:`~airflow_quota_provider.airflow_pools.history_store.HistoryStore`). Every
``downsample_every`` seconds it downsamples what is older than its retention keeps.

**Nothing counted twice, nothing lost.** The figures last recorded are read from the
database whenever the manager starts, takes the lead over (a standby taking over from
a leader that stopped or died) or is told to :meth:`CycleRecording.forget`: the new
leader goes on from what the database holds, whoever wrote it. A change is a step of
a step function, so the same figures recorded twice count once; a try's start is
recorded once (the database refuses a second row for it). A cycle is never recorded
before the history's last known moment (a standby whose clock is behind the old
leader's records at that moment instead). A ``--once`` run records its one cycle; a
config taken live changes the figures it owns from that cycle on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from airflow_quota_provider.airflow_pools.cycle_history import cycle_figures, starts_of
from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.history_store import HistoryStore
from airflow_quota_provider.airflow_pools.tasks import PoolTask
from airflow_quota_provider.core.history import ZERO, Change, Figures, Key, changes
from airflow_quota_provider.core.retention import Retention, for_days
from airflow_quota_provider.core.task_key import TaskKey

log = logging.getLogger(__name__)

DOWNSAMPLE_SECONDS = 3600.0
"""How often the manager downsamples its history (and once when it starts)."""


class CycleRecording:
    """Records the history of one fleet, a cycle at a time.

    :param store: where the history is kept.
    :param days: how many days it is kept (``--history-days``); by default the
        ``history_days`` of the config each cycle runs, else
        :class:`~airflow_quota_provider.core.retention.Retention`'s.
    :param downsample_every: seconds between downsamplings.
    """

    def __init__(
        self,
        store: HistoryStore,
        *,
        days: float | None = None,
        downsample_every: float = DOWNSAMPLE_SECONDS,
    ) -> None:
        self.store = store
        self.days = days
        self.downsample_every = downsample_every
        self._last: dict[Key, Figures] | None = None
        self._until = 0
        self._tries: set[tuple[str, int]] = set()
        """Tries known recorded (of the tasks holding slots at the last cycle)."""
        self._downsampled: int | None = None

    def forget(self) -> None:
        """Read the figures last recorded from the database at the next cycle (the
        manager took the lead, or may have lost it meanwhile)."""
        self._last = None

    def record(
        self,
        fleet: Fleet,
        tasks: Sequence[PoolTask],
        now: float,
        stopped: Callable[[TaskKey], int | None] = lambda _: None,
    ) -> list[Change]:
        """Record the cycle that read ``tasks`` at ``now`` (seconds); return its changes.

        :param stopped: when a task's latest preemption stopped it (epoch ms), asked
            only for a later try that Airflow gives no ``scheduled_when`` for.
        """
        if self._last is None:
            self._last, self._until = self.store.latest()
            self._downsampled = self.store.downsampled_at()
            self._tries = set()
        at = max(round(now * 1000), self._until)
        figures = cycle_figures(fleet, tasks)
        made = changes(self._last, figures, at)
        holding = [t for t in tasks if t.pool in fleet.shares and t.state.counted]
        holding_tries = {(str(t.key), max(1, t.try_number)) for t in holding}
        unseen = holding_tries - self._tries
        if unseen:
            self._tries |= self.store.recorded_tries(job for job, _ in unseen)
        needs = [t.key for t in holding if t.scheduled_at is None and t.try_number > 1]
        found = {key: stop for key in needs if (stop := stopped(key)) is not None}
        starts = starts_of(fleet, holding, at, self._tries, found)
        self.store.write(made, starts, at)
        for change in made:
            if change.figures == ZERO:
                self._last.pop(change.key, None)
            else:
                self._last[change.key] = change.figures
        self._until = at
        self._tries = (self._tries | {(s.job_id, s.attempt) for s in starts}) & holding_tries
        self._downsample(at, self.retention(fleet))
        return made

    def retention(self, fleet: Fleet) -> Retention:
        """How long and how finely the history of ``fleet`` (as its config is now) is kept."""
        days = self.days if self.days is not None else fleet.config.history_days
        return Retention() if days is None else for_days(days)

    def _downsample(self, at: int, retention: Retention) -> None:
        last = self._downsampled
        if last is not None and at - last < self.downsample_every * 1000:
            return
        self.store.downsample(at, retention)
        self._downsampled = at
        log.debug("history of fleet %s downsampled", self.store.fleet)
