"""Read what AWS Batch has now for a sync target: Describe and List calls, every page, and
one ``DescribeQuotaShare`` per share for its tags.

The result is the plain dicts Batch answers with, in an
:class:`~airflow_quota_provider.sync.snapshot.AwsState` for the pure planner.
A failed call raises :class:`~airflow_quota_provider.aws_batch.errors.AwsCallFailed`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from airflow_quota_provider.aws_batch.errors import aws_call
from airflow_quota_provider.aws_batch.paging import all_items
from airflow_quota_provider.aws_batch.statuses import ACTIVE_STATUSES
from airflow_quota_provider.sync.shapes import named
from airflow_quota_provider.sync.snapshot import AwsState
from airflow_quota_provider.sync.target import SyncTarget


def read_state(batch: Any, target: SyncTarget) -> AwsState:
    """The target's environment, policy, queue, shares and unfinished jobs as AWS has them."""
    environment = _first(
        _pages(
            batch,
            "DescribeServiceEnvironments",
            "serviceEnvironments",
            serviceEnvironments=[target.service_environment],
        ),
        "serviceEnvironmentName",
        target.service_environment,
    )
    policy = _policy_named(batch, target.scheduling_policy)
    queue = _first(
        _pages(batch, "DescribeJobQueues", "jobQueues", jobQueues=[target.job_queue]),
        "jobQueueName",
        target.job_queue,
    )
    if queue is None:
        return AwsState(environment=environment, policy=policy)
    listed = _pages(batch, "ListQuotaShares", "quotaShares", jobQueue=target.job_queue)
    shares = [_described_share(batch, share) for share in listed]
    return AwsState(
        environment=environment,
        policy=policy,
        queue=queue,
        queue_policy=_queue_policy(batch, queue, policy),
        shares=shares,
        jobs=_unfinished_jobs(batch, target.job_queue),
    )


def _policy_named(batch: Any, name: str) -> dict[str, Any] | None:
    """Batch lists policies by ARN only; the name is the ARN's last part."""
    arns = [
        item["arn"]
        for item in _pages(batch, "ListSchedulingPolicies", "schedulingPolicies")
        if named(item["arn"], "scheduling policy", name)
    ]
    return _describe_policy(batch, arns[0]) if arns else None


def _queue_policy(
    batch: Any, queue: Mapping[str, Any], policy: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    arn = queue.get("schedulingPolicyArn")
    if not arn:
        return None
    if policy is not None and policy.get("arn") == arn:
        return dict(policy)
    return _describe_policy(batch, str(arn))


def _describe_policy(batch: Any, arn: str) -> dict[str, Any] | None:
    with aws_call("DescribeSchedulingPolicies"):
        found = batch.describe_scheduling_policies(arns=[arn])["schedulingPolicies"]
    return dict(found[0]) if found else None


def _described_share(batch: Any, share: Mapping[str, Any]) -> dict[str, Any]:
    """The share with its tags (``ListQuotaShares`` gives none): the record of apply's last
    change, which its next change carries on."""
    with aws_call("DescribeQuotaShare"):
        described: dict[str, Any] = batch.describe_quota_share(quotaShareArn=share["quotaShareArn"])
    described.pop("ResponseMetadata", None)
    return described


def _unfinished_jobs(batch: Any, queue: str) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    for status in ACTIVE_STATUSES:
        jobs.extend(
            _pages(batch, "ListServiceJobs", "jobSummaryList", jobQueue=queue, jobStatus=status)
        )
    return jobs


def _pages(batch: Any, operation: str, key: str, **params: Any) -> Iterator[dict[str, Any]]:
    """Every item under ``key`` of every page of ``operation``; its errors in our words."""
    with aws_call(operation):
        yield from all_items(batch, operation, key, **params)


def _first(items: Iterator[dict[str, Any]], key: str, name: str) -> dict[str, Any] | None:
    """The item called ``name``; a list by names may hold ARN matches and others' items."""
    return next((item for item in items if item.get(key) == name), None)
