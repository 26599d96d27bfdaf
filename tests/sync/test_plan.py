"""The pure planner: whole plans from a target and AWS's answers, no AWS involved."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from airflow_quota_provider.core.model import IdleAssignment, ShareState, Sharing, VictimOrder
from airflow_quota_provider.exceptions import Problem
from airflow_quota_provider.sync.changes import Change, Plan, PolicyArn
from airflow_quota_provider.sync.plan import plan
from airflow_quota_provider.sync.render import plan_lines
from airflow_quota_provider.sync.snapshot import AwsState
from airflow_quota_provider.sync.target import SyncTarget
from tests.sync.builders import (
    ARN,
    G5,
    P4D,
    QUEUE,
    aws_share,
    environment,
    nlp,
    policy,
    queue,
    running,
    synced,
    target,
    vision,
)

TWO = target(nlp(borrow_limit=100, in_share_preemption=True), vision())
OLD = nlp().__class__("old", {P4D: 2}, Sharing.RESERVE)


def env_change(*details: str, destructive: str | None = None) -> Change:
    return Change("update", "service environment", f"{QUEUE}-env", details, destructive)


def share_change(name: str, *details: str, destructive: str | None = None) -> Change:
    return Change("update", "quota share", name, details, destructive)


@dataclass
class Case:
    id: str
    target: SyncTarget
    state: AwsState
    want_changes: tuple[Change, ...]
    want_blockers: tuple[str, ...] = ()
    want_warnings: tuple[Problem, ...] = field(default=())


CASES = [
    Case(
        "an empty account gets everything created",
        TWO,
        AwsState(),
        (
            Change(
                "create",
                "service environment",
                f"{QUEUE}-env",
                ("SAGEMAKER_TRAINING", f"{P4D}: 16"),
            ),
            Change("create", "scheduling policy", f"{QUEUE}-policy", ("quotaSharePolicy FIFO",)),
            Change(
                "create",
                "job queue",
                QUEUE,
                (
                    "priority 1",
                    f"service environment {QUEUE}-env",
                    f"scheduling policy {QUEUE}-policy",
                ),
            ),
            Change(
                "create",
                "quota share",
                "nlp",
                (
                    f"{P4D}: 8",
                    "LEND_AND_BORROW",
                    "borrow_limit 100%",
                    "in-share preemption ENABLED",
                ),
            ),
            Change(
                "create",
                "quota share",
                "vision",
                (f"{P4D}: 6", "LEND", "in-share preemption DISABLED"),
            ),
        ),
    ),
    Case("an account that matches has nothing to change", TWO, synced(TWO), ()),
    Case(
        "a borrowLimit AWS leaves out means unlimited, as the config's default",
        target(nlp()),
        synced(
            target(nlp()),
            shares=[
                {
                    **aws_share(nlp()),
                    "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW"},
                }
            ],
        ),
        (),
    ),
    Case(
        "lowering a share while nothing runs is a plain update",
        target(nlp(borrow_limit=100, in_share_preemption=True), vision(capacity={P4D: 4})),
        synced(TWO),
        (share_change("vision", f"capacity {P4D} 6 -> 4"),),
    ),
    Case(
        "lowering a share below what its jobs hold is destructive; queued jobs do not count",
        target(nlp(capacity={P4D: 2}, borrow_limit=100, in_share_preemption=True), vision()),
        synced(
            TWO,
            jobs=[
                running("nlp", 2),
                running("nlp", 1, status="STARTING"),
                running("nlp", 4, status="RUNNABLE"),
            ],
        ),
        (
            share_change(
                "nlp",
                f"capacity {P4D} 8 -> 2",
                destructive=f"{P4D} 8 -> 2 is below the 3 in use by share nlp now",
            ),
        ),
    ),
    Case(
        "a share not in the config is deleted, destructively, counting its unfinished jobs",
        TWO,
        synced(
            TWO,
            shares=[*synced(TWO).shares, aws_share(OLD)],
            jobs=[running("old", 1, status="RUNNABLE")],
        ),
        (
            Change(
                "delete",
                "quota share",
                "old",
                destructive="not in the config; 1 of its jobs has not ended",
            ),
        ),
    ),
    Case(
        "strategy, borrow limit, preemption and state changes are listed one by one",
        target(
            nlp(borrow_limit=-1, in_share_preemption=False, state=ShareState.DISABLED),
            vision(sharing=Sharing.LEND_AND_BORROW, borrow_limit=50),
        ),
        synced(TWO),
        (
            share_change(
                "nlp",
                "borrow_limit 100% -> unlimited",
                "in-share preemption ENABLED -> DISABLED",
                "state ENABLED -> DISABLED",
            ),
            share_change(
                "vision", "strategy LEND -> LEND_AND_BORROW", "borrow_limit (none) -> 50%"
            ),
        ),
    ),
    Case(
        "lowering the environment below what the queue runs is destructive",
        target(nlp(capacity={P4D: 4}), capacity={P4D: 4}),
        synced(target(nlp(capacity={P4D: 4}), capacity={P4D: 16}), jobs=[running("nlp", 5)]),
        (
            env_change(
                f"capacity {P4D} 16 -> 4",
                destructive=f"{P4D} 16 -> 4 is below the 5 in use by job queue {QUEUE} now",
            ),
        ),
    ),
    Case(
        "a unit the environment gives up shows as (none)",
        target(nlp(capacity={P4D: 4}), capacity={P4D: 4}),
        synced(target(nlp(capacity={P4D: 4}), capacity={P4D: 4, G5: 2})),
        (env_change(f"capacity {G5} 2 -> (none)"),),
    ),
    Case(
        "a queue on another scheduling policy is moved to the config's, destructively",
        TWO,
        synced(
            TWO,
            queue=queue(schedulingPolicyArn=f"{ARN}:scheduling-policy/legacy", priority=5),
            queue_policy=policy("legacy", fair_share=True),
        ),
        (
            Change(
                "update",
                "job queue",
                QUEUE,
                ("priority 5 -> 1", f"scheduling policy legacy -> {QUEUE}-policy"),
                "moves the job queue away from its fair-share scheduling policy legacy",
            ),
        ),
    ),
    Case(
        "a fair-share policy under the config's name cannot become quota-share",
        TWO,
        synced(TWO, policy=policy(fair_share=True), queue=None, shares=[]),
        (
            Change(
                "create",
                "job queue",
                QUEUE,
                (
                    "priority 1",
                    f"service environment {QUEUE}-env",
                    f"scheduling policy {QUEUE}-policy",
                ),
            ),
            *(c for c in plan(TWO, AwsState()).changes if c.kind == "quota share"),
        ),
        want_blockers=(
            f"scheduling policy {QUEUE}-policy is a fair-share policy; AWS cannot turn it into a "
            "quota-share policy: name another scheduling_policy or delete it first",
        ),
    ),
    Case(
        "an environment of another type cannot be changed in place",
        TWO,
        synced(TWO, environment=environment({P4D: 16}, serviceEnvironmentType="EKS")),
        (),
        want_blockers=(
            f"service environment {QUEUE}-env is of type EKS, not SAGEMAKER_TRAINING; AWS cannot "
            "change its type: name another service_environment or delete this one first",
        ),
    ),
    Case(
        "settings AWS has no field for are warnings at their config paths",
        SyncTarget(
            TWO.config.__class__(
                QUEUE,
                {P4D: 16},
                (nlp(weight=2.0, min_runtime_seconds=300), vision()),
                idle_assignment=IdleAssignment.FAIR,
                min_runtime_seconds=600,
                victim_order=VictimOrder.LEAST_WORK_LOST,
            ),
            f"{QUEUE}-env",
            f"{QUEUE}-policy",
        ),
        synced(target(nlp(), vision())),
        (),
        want_warnings=(
            Problem(
                "idle_assignment",
                "FAIR is not applied: AWS Batch has no field for it; "
                "AWS hands idle capacity to borrowers FIFO",
            ),
            Problem("min_runtime_seconds", "600 is not applied: AWS Batch has no field for it"),
            Problem(
                "victim_order",
                "least_work_lost is not applied: AWS Batch has no field for it; "
                "AWS picks preemption victims by its own heuristic",
            ),
            Problem("shares[0].weight", "2 is not applied: AWS Batch has no field for it"),
            Problem(
                "shares[0].min_runtime_seconds", "300 is not applied: AWS Batch has no field for it"
            ),
        ),
    ),
    Case(
        "a DISABLED queue is left alone, with a warning",
        TWO,
        synced(TWO, queue=queue(state="DISABLED")),
        (),
        want_warnings=(
            Problem("", f"job queue {QUEUE} is DISABLED; plan and apply leave its state alone"),
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_plan(case: Case) -> None:
    result = plan(case.target, case.state)
    assert result.changes == case.want_changes
    assert result.blockers == case.want_blockers
    assert result.warnings == case.want_warnings


def calls(result: Plan) -> list[tuple[str, str, dict[str, int] | None]]:
    """Each call's operation and capacity limits (or name), in order."""
    shown: list[tuple[str, str, dict[str, int] | None]] = []
    for call in result.calls:
        limits = call.params.get("capacityLimits")
        what = {c["capacityUnit"]: c["maxCapacity"] for c in limits} if limits else None
        name = call.params.get("quotaShareArn", call.params.get("quotaShareName", ""))
        shown.append((call.operation, str(name).rsplit("/", 1)[-1], what))
    return shown


def test_an_empty_account_is_created_in_dependency_order_and_the_queue_waits_for_the_policy_arn() -> (  # noqa: E501
    None
):
    result = plan(TWO, AwsState())
    assert [c.operation for c in result.calls] == [
        "CreateServiceEnvironment",
        "CreateSchedulingPolicy",
        "CreateJobQueue",
        "CreateQuotaShare",
        "CreateQuotaShare",
    ]
    assert result.calls[2].params["schedulingPolicyArn"] == PolicyArn(f"{QUEUE}-policy")


def test_shares_trading_capacity_are_lowered_around_the_environment_and_raised_after() -> None:
    """nlp gives up p4d for g5, vision takes p4d; the environment drops some p4d and adds g5.
    No call may leave the shares owning more than the environment has."""
    before = target(nlp(capacity={P4D: 8}), vision(capacity={P4D: 6}), capacity={P4D: 16})
    after = target(nlp(capacity={G5: 4}), vision(capacity={P4D: 10}), capacity={P4D: 12, G5: 4})
    result = plan(after, synced(before))
    assert calls(result) == [
        ("UpdateServiceEnvironment", "", {P4D: 16, G5: 4}),
        ("UpdateQuotaShare", "nlp", {G5: 0}),
        ("UpdateServiceEnvironment", "", {P4D: 12, G5: 4}),
        ("UpdateQuotaShare", "nlp", {G5: 4}),
        ("UpdateQuotaShare", "vision", {P4D: 10}),
    ]
    assert result.changes == (
        env_change(f"capacity {G5} (none) -> 4", f"capacity {P4D} 16 -> 12"),
        share_change("nlp", f"capacity {G5} (none) -> 4", f"capacity {P4D} 8 -> (none)"),
        share_change("vision", f"capacity {P4D} 6 -> 10"),
    )


def test_deletes_come_before_the_raises_that_need_their_capacity() -> None:
    before = target(nlp(), OLD)
    after = target(nlp(capacity={P4D: 10}))
    assert calls(plan(after, synced(before))) == [
        ("DeleteQuotaShare", "old", None),
        ("UpdateQuotaShare", "nlp", {P4D: 10}),
    ]


def test_a_plan_that_only_blocks_says_what_blocks_it_and_never_no_changes() -> None:
    eks = synced(TWO, environment=environment({P4D: 16}, serviceEnvironmentType="EKS"))
    assert plan_lines(plan(TWO, eks), QUEUE) == [
        f"Plan for job queue {QUEUE}:",
        "Cannot be changed in place (apply refuses to run):",
        f"  service environment {QUEUE}-env is of type EKS, not SAGEMAKER_TRAINING; AWS cannot "
        "change its type: name another service_environment or delete this one first",
    ]
    assert plan_lines(plan(TWO, synced(TWO)), QUEUE) == [
        f"Plan for job queue {QUEUE}:",
        "No changes: AWS matches the config.",
    ]
