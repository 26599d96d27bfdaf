"""GetJobQueueSnapshot: the front of a queue and of each share, and capacity use per share.

"Dispatch order" across shares is the core's within each share (priority,
then submission); across shares the emulator lists jobs by the same key, as
the core's cycle order depends on capacity at the moment of each cycle.
``earliestTimeAtPosition`` is when the job last became RUNNABLE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_quota_provider.emulator.batch_checks import found
from airflow_quota_provider.emulator.queue_config import IMPLICIT_SHARE
from airflow_quota_provider.emulator.registry import Handler, Params, Response
from airflow_quota_provider.emulator.store import ServiceJob

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World

FRONT_OF_QUEUE = 100


def snapshot(world: World, params: Params) -> Response:
    queue = found(world.store.queue(params["jobQueue"]), "job queue", params["jobQueue"])
    state = world.dispatcher.state(queue.arn)
    jobs = world.store.jobs
    now = world.now_ms
    waiting = sorted(state.waiting(), key=lambda w: w.order_key)
    front = [_entry(jobs[w.id]) for w in waiting[:FRONT_OF_QUEUE]]
    heads: dict[str, list[dict[str, Any]]] = {}
    for share in state.queued_shares():
        entries = state.queue(share)
        if entries and share != IMPLICIT_SHARE:
            heads[share] = [_entry(jobs[entries[0][2]])]
    usage = state.usage_by_share()
    total: dict[str, int] = {}
    for counts in usage.values():
        for unit, count in counts.items():
            total[unit] = total.get(unit, 0) + count
    # Every unit a share owns is listed, at 0 when idle, and any unit it borrows.
    per_share = [
        {
            "quotaShareName": share.name,
            "capacityUsage": _usage(
                {**dict.fromkeys(share.capacity, 0), **usage.get(share.name, {})}
            ),
        }
        for share in state.config.shares
        if share.name != IMPLICIT_SHARE
    ]
    return {
        "frontOfQueue": {"jobs": front, "lastUpdatedAt": now},
        "frontOfQuotaShares": {"quotaShares": heads, "lastUpdatedAt": now},
        "queueUtilization": {
            "totalCapacityUsage": _usage(total),
            "quotaShareUtilization": {"topCapacityUtilization": per_share},
            "lastUpdatedAt": now,
        },
    }


def _entry(job: ServiceJob) -> dict[str, Any]:
    return {"jobArn": job.arn, "earliestTimeAtPosition": job.runnable_since}


def _usage(counts: Mapping[str, int]) -> list[dict[str, Any]]:
    return [
        {"capacityUnit": unit, "quantity": float(count)} for unit, count in sorted(counts.items())
    ]


HANDLERS: dict[str, Handler] = {"GetJobQueueSnapshot": snapshot}
