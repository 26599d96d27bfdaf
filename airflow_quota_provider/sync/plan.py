"""The sync planner: from the target and what AWS has now, the ordered changes to make.

Pure: AWS's state comes in as the plain dicts Batch's Describe/List calls
return (:class:`~airflow_quota_provider.sync.snapshot.AwsState`, read by
:mod:`airflow_quota_provider.sync.aws_state`) and the result is a
:class:`~airflow_quota_provider.sync.changes.Plan`.

The calls are ordered by dependency, in phases:

1. the service environment is created, or its raised limits are applied;
2. the quota-share scheduling policy is created;
3. the job queue is created or updated;
4. shares are deleted; 5. shares are lowered;
6. the environment's lowered limits are applied, now that no share owns them;
7. shares are raised, updated and created.

Destructive (apply needs ``--allow-destructive``): deleting a share; lowering
the environment or a share below what SCHEDULED, STARTING and RUNNING jobs use
now; moving an existing queue to another scheduling policy. Differences AWS
cannot change in place (a resource's type) are blockers: reported, never tried.
Config settings AWS has no field for are warnings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_quota_provider.aws_batch.change_tags import (
    CHANGED_AT,
    CREATED_AT,
    capacity_settings,
    change_tags,
    creation_tags,
)
from airflow_quota_provider.aws_batch.statuses import HOLDING_STATUSES
from airflow_quota_provider.sync.capacity import CapacityDiff, InUse
from airflow_quota_provider.sync.changes import (
    ENVIRONMENT,
    POLICY,
    QUEUE,
    Call,
    Change,
    Plan,
    PolicyArn,
    Record,
)
from airflow_quota_provider.sync.shapes import (
    QUOTA_SHARE_POLICY,
    capacity_limits,
    limits_from_aws,
    named,
    show_capacity,
)
from airflow_quota_provider.sync.share_plan import plan_shares
from airflow_quota_provider.sync.snapshot import AwsState
from airflow_quota_provider.sync.target import SyncTarget
from airflow_quota_provider.sync.warnings import state_warnings, unsupported_settings

SAGEMAKER_TRAINING = "SAGEMAKER_TRAINING"


def plan(target: SyncTarget, state: AwsState) -> Plan:
    """The changes that make AWS match ``target``, and the calls that make them, in order."""
    warnings = (*unsupported_settings(target.config), *state_warnings(target, state))
    blockers = _blockers(target, state)
    by_share, queue_use, unfinished = _usage(state.jobs)
    environment, raise_env, lower_env = _environment(target, state.environment, queue_use)
    policy = _policy(target, state.policy)
    queue = _queue(target, state)
    shares = plan_shares(target.config, state.shares, by_share, unfinished)
    calls = [
        *raise_env,
        *policy,
        *queue,
        *shares.deletes,
        *shares.lowers,
        *lower_env,
        *shares.raises,
    ]
    resources = [environment] if environment else []
    changes = [*resources, *(c.change for c in (*policy, *queue)), *shares.changes]
    return Plan(tuple(changes), tuple(calls), warnings, tuple(blockers))


def _usage(
    jobs: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, InUse], InUse, dict[str, int]]:
    """Instances in use per share and per queue, and unfinished jobs per share."""
    by_share: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    queue: dict[str, float] = defaultdict(float)
    unfinished: dict[str, int] = defaultdict(int)
    for job in jobs:
        share = str(job.get("quotaShareName", ""))
        unfinished[share] += 1
        if job.get("status") not in HOLDING_STATUSES:
            continue
        for usage in job.get("capacityUsage") or ():
            unit, quantity = str(usage["capacityUnit"]), float(usage["quantity"])
            by_share[share][unit] += quantity
            queue[unit] += quantity
    return dict(by_share), queue, unfinished


def _blockers(target: SyncTarget, state: AwsState) -> list[str]:
    blockers = []
    kind = (state.environment or {}).get("serviceEnvironmentType", SAGEMAKER_TRAINING)
    if kind != SAGEMAKER_TRAINING:
        blockers.append(
            f"service environment {target.service_environment} is of type {kind}, not "
            f"{SAGEMAKER_TRAINING}; AWS cannot change its type: name another "
            "service_environment or delete this one first"
        )
    if state.policy is not None and not state.policy.get("quotaSharePolicy"):
        blockers.append(
            f"scheduling policy {target.scheduling_policy} is a fair-share policy; AWS cannot "
            "turn it into a quota-share policy: name another scheduling_policy or delete it first"
        )
    kind = (state.queue or {}).get("jobQueueType", SAGEMAKER_TRAINING)
    if kind != SAGEMAKER_TRAINING:
        blockers.append(
            f"job queue {target.job_queue} is of type {kind}, not {SAGEMAKER_TRAINING}; "
            "AWS cannot change its type: use another job_queue or delete this one first"
        )
    return blockers


def _environment(
    target: SyncTarget, found: Mapping[str, Any] | None, in_use: InUse
) -> tuple[Change | None, list[Call], list[Call]]:
    """The environment's change, and its calls before the shares and after their lowering."""
    name, wanted = target.service_environment, dict(target.config.capacity)
    if found is None:
        change = Change("create", ENVIRONMENT, name, (SAGEMAKER_TRAINING, show_capacity(wanted)))
        params = {
            "serviceEnvironmentName": name,
            "serviceEnvironmentType": SAGEMAKER_TRAINING,
            "state": "ENABLED",
            "capacityLimits": capacity_limits(wanted),
        }
        tags = creation_tags(capacity_settings(wanted))
        record = Record(CREATED_AT, tags, arn_key="serviceEnvironmentArn")
        return change, [Call("CreateServiceEnvironment", params, change, record)], []
    before = limits_from_aws(found.get("capacityLimits"))
    diff = CapacityDiff(before, wanted)
    if not diff.units:
        return None, [], []
    why = diff.below(in_use, f"job queue {target.job_queue}")
    change = Change("update", ENVIRONMENT, name, tuple(diff.lines()), why)
    tags = change_tags(
        found.get("tags") or {}, capacity_settings(before), capacity_settings(wanted)
    )
    record = Record(CHANGED_AT, tags, arn=str(found.get("serviceEnvironmentArn") or name))
    first: list[Call] = []
    if diff.raises:
        limits = diff.raised_only() if diff.lowers else wanted
        first.append(_update_environment(name, limits, change, None if diff.lowers else record))
    last = [_update_environment(name, wanted, change, record)] if diff.lowers else []
    return change, first, last


def _update_environment(
    name: str, limits: Mapping[str, int], change: Change, record: Record | None
) -> Call:
    params = {"serviceEnvironment": name, "capacityLimits": capacity_limits(limits)}
    return Call("UpdateServiceEnvironment", params, change, record)


def _policy(target: SyncTarget, found: Mapping[str, Any] | None) -> list[Call]:
    if found is not None:
        return []
    name = target.scheduling_policy
    change = Change("create", POLICY, name, ("quotaSharePolicy FIFO",))
    params = {"name": name, "quotaSharePolicy": dict(QUOTA_SHARE_POLICY)}
    return [Call("CreateSchedulingPolicy", params, change)]


def _queue(target: SyncTarget, state: AwsState) -> list[Call]:
    policy_arn: object = (state.policy or {}).get("arn") or PolicyArn(target.scheduling_policy)
    order = [{"order": 1, "serviceEnvironment": target.service_environment}]
    if state.queue is None:
        details = (
            f"priority {target.job_queue_priority}",
            f"{ENVIRONMENT} {target.service_environment}",
            f"{POLICY} {target.scheduling_policy}",
        )
        change = Change("create", QUEUE, target.job_queue, details)
        params = {
            "jobQueueName": target.job_queue,
            "jobQueueType": SAGEMAKER_TRAINING,
            "state": "ENABLED",
            "priority": target.job_queue_priority,
            "schedulingPolicyArn": policy_arn,
            "serviceEnvironmentOrder": order,
        }
        record = Record(CREATED_AT, {}, arn_key="jobQueueArn")
        return [Call("CreateJobQueue", params, change, record)]
    changed, differences, why = _queue_differences(target, state, policy_arn, order)
    if not differences:
        return []
    change = Change("update", QUEUE, target.job_queue, tuple(differences), why)
    return [Call("UpdateJobQueue", {"jobQueue": target.job_queue, **changed}, change)]


def _queue_differences(
    target: SyncTarget, state: AwsState, policy_arn: object, order: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[str], str | None]:
    queue = state.queue or {}
    params: dict[str, Any] = {}
    details: list[str] = []
    why = None
    if queue.get("priority") != target.job_queue_priority:
        params["priority"] = target.job_queue_priority
        details.append(f"priority {queue.get('priority')} -> {target.job_queue_priority}")
    environments = [e.get("serviceEnvironment") for e in queue.get("serviceEnvironmentOrder") or ()]
    if len(environments) != 1 or not named(
        environments[0], ENVIRONMENT, target.service_environment
    ):
        params["serviceEnvironmentOrder"] = order
        old = ", ".join(_last(e) for e in environments) or "(none)"
        details.append(f"{ENVIRONMENT} {old} -> {target.service_environment}")
    current = queue.get("schedulingPolicyArn")
    if not named(current, POLICY, target.scheduling_policy):
        params["schedulingPolicyArn"] = policy_arn
        old = _last(current) if current else "(none)"
        details.append(f"{POLICY} {old} -> {target.scheduling_policy}")
        if current:
            why = _policy_move(state.queue_policy, old)
    return params, details, why


def _policy_move(policy: Mapping[str, Any] | None, old: str) -> str:
    kind = "quota-share" if policy and policy.get("quotaSharePolicy") else "fair-share"
    return f"moves the job queue away from its {kind} scheduling policy {old}"


def _last(reference: object) -> str:
    """A resource's name from its name or ARN."""
    return str(reference).rsplit("/", 1)[-1]
