"""How the triggers read their connections (``hooks/connections.py``): on the event loop,
whole; AWS hooks built from one in a thread, once per connection; and no boto3 while Airflow
imports a trigger on the triggerer's event loop.

That the read is safe inside a real triggerer of each Airflow line is
``tests/airflow/test_triggerer_load.py``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from typing import Any, cast

import pytest
from airflow.providers.common.compat.sdk import AirflowNotFoundException
from botocore.client import BaseClient

from airflow_quota_provider.hooks.batch import BatchQuotaHook
from airflow_quota_provider.hooks.connections import aws_hook, get_connection

AWS = (
    "aws://AKIDQUOTATEST:s3cret-Key@/?region_name=eu-west-1&endpoint_url=http%3A%2F%2F127.0.0.1%3A1"
)
ARGUMENTS: dict[str, Any] = {
    "aws_conn_id": "quota_test_aws",
    "region_name": None,
    "verify": None,
    "config": None,
}


def client_of(hook: BatchQuotaHook) -> BaseClient:
    # Airflow annotates conn as ``boto3.client``, a function (not a type) in boto3-stubs
    return cast(BaseClient, hook.conn)


def test_a_connection_is_read_whole_and_never_shows_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_QUOTA_TEST_AWS", AWS)
    conn = asyncio.run(get_connection("quota_test_aws"))
    assert (conn.conn_id, conn.conn_type, conn.login, conn.password) == (
        "quota_test_aws",
        "aws",
        "AKIDQUOTATEST",
        "s3cret-Key",
    )
    assert conn.extra_dejson == {"region_name": "eu-west-1", "endpoint_url": "http://127.0.0.1:1"}
    assert "s3cret" not in repr(conn)


def test_a_missing_connection_is_airflow_s_not_found() -> None:
    with pytest.raises(AirflowNotFoundException):
        asyncio.run(get_connection("quota_test_no_such_connection"))


def test_an_aws_hook_is_built_off_the_loop_from_the_connection_read_once_per_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_QUOTA_TEST_AWS", AWS)
    built_in: list[threading.Thread] = []

    def make(**arguments: Any) -> BatchQuotaHook:
        built_in.append(threading.current_thread())
        return BatchQuotaHook(**arguments)

    async def main() -> list[BatchQuotaHook]:
        # two triggers at once on one connection, then another region
        hooks = list(await asyncio.gather(aws_hook(make, **ARGUMENTS), aws_hook(make, **ARGUMENTS)))
        hooks.append(await aws_hook(make, **{**ARGUMENTS, "region_name": "us-west-2"}))
        # the connection changes: triggers started since get a hook of the new one
        monkeypatch.setenv("AIRFLOW_CONN_QUOTA_TEST_AWS", AWS.replace("127.0.0.1%3A1", "h%3A2"))
        hooks.append(await aws_hook(make, **ARGUMENTS))
        return hooks

    first, second, other_region, changed = asyncio.run(main())
    assert first is second
    assert len({id(first), id(other_region), id(changed)}) == 3
    assert len(built_in) == 3 and threading.main_thread() not in built_in
    assert first.conn_config.aws_access_key_id == "AKIDQUOTATEST"
    assert first.conn_config.region_name == "eu-west-1"
    assert other_region.conn_config.region_name == "us-west-2"
    assert client_of(first).meta.endpoint_url == "http://127.0.0.1:1"
    assert client_of(changed).meta.endpoint_url == "http://h:2"


def test_a_missing_aws_connection_leaves_boto3_s_defaults_as_the_hook_would() -> None:
    async def main() -> BatchQuotaHook:
        missing = {"aws_conn_id": "quota_test_none", "region_name": "us-east-1"}
        return await aws_hook(BatchQuotaHook, **{**ARGUMENTS, **missing})

    hook = asyncio.run(main())
    # the hook's own "switching to empty": no login, no endpoint of the connection's
    assert (hook.conn_config.conn_type, hook.conn_config.endpoint_url) == (None, None)
    assert client_of(hook).meta.region_name == "us-east-1"


def test_airflow_imports_and_makes_every_trigger_without_boto3() -> None:
    """Airflow imports a trigger's module and makes the trigger on the triggerer's event
    loop: boto3 and urllib3 (0.2 s and more) wait for the trigger's threads."""
    code = """
import sys
import airflow.triggers.base
before = set(sys.modules)
from airflow_quota_provider.triggers.capacity import QuotaCapacityTrigger
from airflow_quota_provider.triggers.batch import ServiceJobTrigger
from airflow_quota_provider.triggers.sagemaker import TrainingJobTrigger
QuotaCapacityTrigger(quota_share="nlp", capacity={"gpu": 1}, fleet_config="fleet.yaml")
QuotaCapacityTrigger(quota_share="nlp", capacity={"gpu": 1}, job_queue="ml-training")
ServiceJobTrigger(job_id="job", job_queue="ml-training")
TrainingJobTrigger(training_job_name="job")
heavy = {"boto3", "botocore", "s3transfer", "urllib3"} & (set(sys.modules) - before)
print(sorted(heavy))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines()[-1] == "[]", done.stderr
