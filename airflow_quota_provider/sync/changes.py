"""The vocabulary of a sync plan: changes to show, and the calls that make them.

A :class:`Change` is what a person reads (``~ update quota share vision:
capacity ml.p4d.24xlarge 6 -> 4``); a :class:`Call` is one Batch operation with
its request. One change may need two calls (a share that gives up one unit and
takes more of another is lowered first and raised later, so that the shares
never own more than the service environment has in between), which is why the
plan keeps the calls in their own order.

The same vocabulary serves a pools fleet (:mod:`~airflow_quota_provider.sync.pool_plan`):
there a change is one pool (``+ create pool quota-nlp-gpu``) and its call one
method of the Airflow gateway (``create_pool``) with its keyword arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from airflow_quota_provider.exceptions import Problem

Action = Literal["create", "update", "delete"]

ENVIRONMENT: str = "service environment"
POLICY: str = "scheduling policy"
QUEUE: str = "job queue"
SHARE: str = "quota share"
POOL: str = "pool"


@dataclass(frozen=True)
class Change:
    """One resource created, updated or deleted.

    :param details: for a create, the settings; for an update, one ``what old -> new``
        per difference; for a delete, nothing.
    :param destructive: why this change may stop or strand work, or ``None``.
    """

    action: Action
    kind: str
    name: str
    details: tuple[str, ...] = ()
    destructive: str | None = None


@dataclass(frozen=True)
class PolicyArn:
    """The ARN of a scheduling policy this same apply creates, unknown until then."""

    name: str


@dataclass(frozen=True)
class Record:
    """The tags apply writes on a resource once a call made its change (see
    :mod:`~airflow_quota_provider.aws_batch.change_tags`), with AWS's time of the answer
    under ``stamp``.

    :param arn: the resource's ARN; ``None`` for one the call creates, whose ARN is in
        its answer under ``arn_key``.
    """

    stamp: str
    tags: Mapping[str, str]
    arn: str | None = None
    arn_key: str = ""


@dataclass(frozen=True)
class Call:
    """One Batch operation (``CreateQuotaShare``) and its request, for ``change``; for a
    pools fleet, one gateway method (``set_pool``) and its keyword arguments.

    A request value may be a :class:`PolicyArn`, filled in by the applier. ``record``:
    what to tag once the call succeeded (the last call of a recorded change).
    """

    operation: str
    params: Mapping[str, Any]
    change: Change
    record: Record | None = None


@dataclass(frozen=True)
class Plan:
    """What apply would do, in order, and what it cannot do.

    :param warnings: settings of the config that AWS Batch has no field for; for
        pools, pools apply adopts.
    :param blockers: differences AWS cannot change in place (for pools: what apply must
        not do now); apply refuses to run.
    :param notes: what differs but is not apply's to change (the slots the pool manager
        sets every cycle); no change, no effect on the exit code.
    """

    changes: tuple[Change, ...] = ()
    calls: tuple[Call, ...] = ()
    warnings: tuple[Problem, ...] = ()
    blockers: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.changes and not self.blockers

    @property
    def destructive(self) -> tuple[Change, ...]:
        return tuple(change for change in self.changes if change.destructive is not None)
