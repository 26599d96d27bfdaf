"""Make a plan true: its Batch calls in order, or nothing at all when it is refused.

Refused before any call (:class:`~airflow_quota_provider.sync.errors.ApplyRefused`):
a plan with blockers, and a plan with destructive changes unless they are
allowed. A call that fails stops the apply with
:class:`~airflow_quota_provider.aws_batch.errors.AwsCallFailed`; the changes done
before it were reported through ``on_done`` and stay done (AWS has no
transactions), so running apply again finishes the rest.

Each creation, and each change of a share's or environment's settings that shape the
usage history, is then recorded on the resource with ``TagResource``
(:mod:`~airflow_quota_provider.aws_batch.change_tags`), stamped with the ``Date`` of
AWS's answer to the call that made it. A record that fails (no ``batch:TagResource``
permission, say) does not stop the apply: the change is made, and ``on_unrecorded`` is
told, since the history of that resource before it will read as not known.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from botocore import xform_name

from airflow_quota_provider.aws_batch.change_tags import aws_time, stamp
from airflow_quota_provider.aws_batch.errors import AwsCallFailed, aws_call
from airflow_quota_provider.sync.changes import Call, Change, Plan, PolicyArn, Record
from airflow_quota_provider.sync.errors import ApplyRefused

OnDone = Callable[[Change], None]
OnUnrecorded = Callable[[Change, AwsCallFailed], None]


def apply_plan(
    batch: Any,
    plan: Plan,
    *,
    allow_destructive: bool = False,
    on_done: OnDone | None = None,
    on_unrecorded: OnUnrecorded | None = None,
) -> tuple[Change, ...]:
    """Run the plan's calls with the Batch client ``batch``; returns the changes made.

    :param on_done: called with each change once its last call succeeded.
    :param on_unrecorded: called with a change made whose record could not be tagged,
        and the failed ``TagResource``.
    """
    refuse_unless_allowed(plan, allow_destructive=allow_destructive)
    last_call = {call.change: index for index, call in enumerate(plan.calls)}
    policy_arns: dict[str, str] = {}
    for index, call in enumerate(plan.calls):
        response = _call(batch, call, policy_arns)
        if call.operation == "CreateSchedulingPolicy":
            policy_arns[str(response["name"])] = str(response["arn"])
        if call.record is not None:
            try:
                _tag(batch, call.record, response)
            except AwsCallFailed as failed:
                if on_unrecorded is not None:
                    on_unrecorded(call.change, failed)
        if on_done is not None and last_call[call.change] == index:
            on_done(call.change)
    return plan.changes


def refuse_unless_allowed(plan: Plan, *, allow_destructive: bool) -> None:
    """Raise :class:`ApplyRefused` if the plan must not run."""
    if plan.blockers:
        raise ApplyRefused(plan.blockers)
    if plan.destructive and not allow_destructive:
        raise ApplyRefused(
            [f"{c.action} {c.kind} {c.name}: {c.destructive}" for c in plan.destructive]
        )


def _call(batch: Any, call: Call, policy_arns: Mapping[str, str]) -> Mapping[str, Any]:
    params = {key: _resolve(value, policy_arns) for key, value in call.params.items()}
    with aws_call(call.operation):
        response: Mapping[str, Any] = getattr(batch, xform_name(call.operation))(**params)
    return response


def _tag(batch: Any, record: Record, response: Mapping[str, Any]) -> None:
    """Write ``record`` on the resource, stamped with AWS's time of ``response``."""
    arn = record.arn or str(response.get(record.arn_key) or "")
    with aws_call("TagResource"):
        if not arn:
            raise AwsCallFailed("TagResource", "NoArn", f"the answer names no {record.arn_key}")
        batch.tag_resource(
            resourceArn=arn, tags={**record.tags, record.stamp: stamp(aws_time(response))}
        )


def _resolve(value: object, policy_arns: Mapping[str, str]) -> object:
    if isinstance(value, PolicyArn):
        return policy_arns[value.name]
    return value
