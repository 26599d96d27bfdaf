"""Who may read the GPU Quotas app: a dependency of its routes (Airflow 3's API server).

A logged-in Airflow user (401 without one) whom the auth manager allows ``GET`` on
the custom view ``GPU Quotas`` (:data:`RESOURCE_NAME`); with FAB that is the
permission "can read on GPU Quotas", with SimpleAuthManager every role has it.
"""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import HTTPException

from airflow_quota_provider.view import RESOURCE_NAME


def may_read_quotas(user: GetUserDep) -> Any:
    """The logged-in user, if the auth manager lets them read the view; 403 otherwise."""
    allowed = get_auth_manager().is_authorized_custom_view(
        method="GET", resource_name=RESOURCE_NAME, user=user
    )
    if not allowed:
        raise HTTPException(
            403,
            f"user {user.get_name()!r} may not read {RESOURCE_NAME}: it needs GET on the "
            f"custom view {RESOURCE_NAME!r} of Airflow's auth manager (with FAB, the "
            f"permission 'can read on {RESOURCE_NAME}')",
        )
    return user
