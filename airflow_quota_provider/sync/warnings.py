"""What a sync cannot make true: config settings AWS Batch has no field for, and states it
leaves alone.

The engine's extensions (FAIR idle assignment, minimum runtime, victim order,
share weights) drive the simulator and the local endpoint only; on AWS Batch
they have no effect, so plan says so instead of dropping them silently. Each
warning is at the config path it is about, like ``airflow-quota validate``'s problems.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_quota_provider.core.model import IdleAssignment, QueueConfig, VictimOrder
from airflow_quota_provider.exceptions import Problem

if TYPE_CHECKING:
    from airflow_quota_provider.sync.snapshot import AwsState
    from airflow_quota_provider.sync.target import SyncTarget

_NOT_APPLIED = "is not applied: AWS Batch has no field for it"


def unsupported_settings(config: QueueConfig) -> list[Problem]:
    """A warning for every setting that differs from what AWS Batch does by itself."""
    found = []
    if config.idle_assignment is not IdleAssignment.FIFO:
        found.append(
            Problem(
                "idle_assignment",
                f"{config.idle_assignment.value} {_NOT_APPLIED}; "
                "AWS hands idle capacity to borrowers FIFO",
            )
        )
    if config.min_runtime_seconds is not None:
        found.append(
            Problem("min_runtime_seconds", f"{config.min_runtime_seconds:g} {_NOT_APPLIED}")
        )
    if config.victim_order is not VictimOrder.MOST_RECENT:
        found.append(
            Problem(
                "victim_order",
                f"{config.victim_order.value} {_NOT_APPLIED}; AWS picks preemption victims "
                "by its own heuristic",
            )
        )
    for index, share in enumerate(config.shares):
        path = f"shares[{index}]"
        if share.weight != 1.0:
            found.append(Problem(f"{path}.weight", f"{share.weight:g} {_NOT_APPLIED}"))
        if share.min_runtime_seconds is not None:
            seconds = f"{share.min_runtime_seconds:g}"
            found.append(Problem(f"{path}.min_runtime_seconds", f"{seconds} {_NOT_APPLIED}"))
    return found


def state_warnings(target: SyncTarget, state: AwsState) -> list[Problem]:
    """Existing resources that are DISABLED: the config does not manage their state."""
    found = []
    resources = (
        ("service environment", target.service_environment, state.environment),
        ("job queue", target.job_queue, state.queue),
    )
    for kind, name, resource in resources:
        if resource is not None and resource.get("state") == "DISABLED":
            message = f"{kind} {name} is DISABLED; plan and apply leave its state alone"
            found.append(Problem("", message))
    return found
