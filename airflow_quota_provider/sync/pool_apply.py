"""Make a pools plan true: its gateway calls in order, or nothing at all when it is refused.

Refused before any call, as for AWS Batch
(:func:`~airflow_quota_provider.sync.apply.refuse_unless_allowed`): a plan with
blockers, and a plan with destructive changes unless they are allowed. A call
that fails stops the apply with its
:class:`~airflow_quota_provider.airflow_pools.gateway.GatewayError`; the changes
done before it were reported through ``on_done`` and stay done (Airflow's API
has no transactions), so running apply again finishes the rest.
"""

from __future__ import annotations

from collections.abc import Callable

from airflow_quota_provider.airflow_pools.gateway import AirflowGateway
from airflow_quota_provider.sync.apply import OnDone, refuse_unless_allowed
from airflow_quota_provider.sync.changes import Change, Plan


def apply_pool_plan(
    gateway: AirflowGateway,
    plan: Plan,
    *,
    allow_destructive: bool = False,
    on_done: OnDone | None = None,
) -> tuple[Change, ...]:
    """Run the plan's calls (``create_pool``, ``set_pool``, ``delete_pool``) with ``gateway``.

    :param on_done: called with each change once its call succeeded.
    """
    refuse_unless_allowed(plan, allow_destructive=allow_destructive)
    methods: dict[str, Callable[..., None]] = {
        "create_pool": gateway.create_pool,
        "set_pool": gateway.set_pool,
        "delete_pool": gateway.delete_pool,
    }
    for call in plan.calls:
        methods[call.operation](**call.params)
        if on_done is not None:
            on_done(call.change)
    return plan.changes
