"""Who would be preempted next: the scheduling core asked about the queue as AWS reports it.

The question put to :func:`~airflow_quota_provider.core.schedule`, for every
share that lends capacity now: *if this share asked for everything it owns
and does not use, whom would a reclaim preempt?* The core answers with its
own victim order and reasons (see :mod:`airflow_quota_provider.core.preemption`);
nothing is re-derived here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from airflow_quota_provider.core import QueueConfig, QueueState, RunningJob, WaitingJob, schedule
from airflow_quota_provider.core.model import MAX_PRIORITY
from airflow_quota_provider.core.occupancy import Occupancy
from airflow_quota_provider.core.views import NextVictim

ASKING = "reclaim-by-{share}"
"""The id of the hypothetical job a lending share submits in the question."""


def next_victims(
    config: QueueConfig,
    running: Iterable[RunningJob],
    table: Mapping[str, Mapping[str, Occupancy]],
    now: float,
) -> dict[str, NextVictim]:
    """Per running job id: the share whose reclaim would preempt it first, and why."""
    jobs = list(running)
    result: dict[str, NextVictim] = {}
    for share in config.shares:
        units = table.get(share.name, {})
        demand = {unit: o.idle + o.lent for unit, o in units.items() if o.lent > 0}
        if not demand or not share.enabled:
            continue
        asking = WaitingJob(
            ASKING.format(share=share.name), share.name, demand, MAX_PRIORITY, submitted=now
        )
        state = QueueState.from_jobs(config, jobs, [asking])
        for preemption in schedule(state, now).preempt:
            if preemption.preemptor == asking.id and preemption.job_id not in result:
                result[preemption.job_id] = NextVictim(
                    share.name, preemption.kind.value, preemption.message
                )
    return result
