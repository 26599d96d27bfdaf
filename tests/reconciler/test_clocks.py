"""The reconciler measures an orphan's grace on one clock, whatever the service's clock says.

The local endpoint, real boto3 over HTTP, with its clock 40 minutes ahead of the wall
clock (as at ``--time-scale 60`` after 40 s): its jobs are created "in the future" by
the wall clock. A job's creation is moved onto the reconciler's clock by the ``Date``
of the answer that reported it, so ``--grace 0`` stops an orphan at once and a grace
is counted by the service's clock from the job's creation. An HTTP server stands in
for Airflow's task instances (:class:`TaskStates`): every task was marked failed an
hour ago.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_quota_provider.core.orphans import TaskSeen
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.reconciler.reconciler import Reconciler
from airflow_quota_provider.reconciler.sources import (
    ServiceJobs,
    TrainingJobs,
    answered_at,
    on_our_clock,
)
from tests.emulator.conftest import (
    QUEUE,
    TWO_SHARES,
    Endpoint,
    serve,
    submit,
    training_payload,
)

AHEAD = 2400.0
"""How far the endpoint's clock runs ahead of the wall clock: 40 minutes."""
TASK = TaskKey("nightly", "manual__1", "train")
LONG = {"emulator:duration-seconds": "1000000"}


class FailedAnHourAgo:
    """Airflow as the reconciler reads it: every task instance failed an hour ago."""

    def task_state(self, key: TaskKey) -> TaskSeen | None:
        return TaskSeen("failed", 1, moved=time.time() - 3600)


@pytest.fixture
def ahead() -> Iterator[Endpoint]:
    """The local endpoint with two shares, its clock stopped 40 minutes ahead of ours."""
    for endpoint in serve(TWO_SHARES):
        endpoint.advance(AHEAD)
        yield endpoint


def service_jobs(endpoint: Endpoint, grace: float) -> Reconciler:
    return Reconciler([ServiceJobs(endpoint.batch, (QUEUE,))], FailedAnHourAgo(), QUEUE, grace)


def test_grace_zero_stops_an_orphan_created_on_a_clock_ahead_of_ours(ahead: Endpoint) -> None:
    job = submit(ahead.batch, "nlp", name="orphan", duration=1_000_000, tags=TASK.tags())
    (stopped,) = service_jobs(ahead, grace=0).reconcile()
    assert stopped.orphan.job.job_id == job
    described = ahead.batch.describe_service_job(jobId=job)
    assert described["isTerminated"]
    assert described["statusReason"] == (
        "Stopped by airflow-quota: its task instance nightly/manual__1/train is failed, so "
        "nothing follows the job (for 0 s)"
    )


def test_a_grace_is_counted_by_the_services_clock_from_the_jobs_creation(
    ahead: Endpoint,
) -> None:
    job = submit(ahead.batch, "nlp", name="orphan", duration=1_000_000, tags=TASK.tags())
    reconciler = service_jobs(ahead, grace=300)
    assert (reconciler.reconcile(), reconciler.waiting) == ([], 1)
    ahead.advance(299)
    assert reconciler.reconcile() == []
    ahead.advance(2)  # 301 s after its creation by the endpoint's clock; the wall's: ~0 s
    (stopped,) = reconciler.reconcile()
    assert stopped.orphan.job.job_id == job


def test_a_training_job_is_dated_on_our_clock_too(ahead: Endpoint) -> None:
    request: dict[str, Any] = training_payload(1, TrainingJobName=TASK.training_job_name(1))
    request["Tags"] = [{"Key": k, "Value": v} for k, v in {**LONG, **TASK.tags()}.items()]
    ahead.sagemaker.create_training_job(**request)
    before = time.time()
    (job,) = TrainingJobs(ahead.sagemaker).live()
    assert before - 1 <= job.created <= time.time(), "not 40 minutes in our future"
    reconciler = Reconciler([TrainingJobs(ahead.sagemaker)], FailedAnHourAgo(), QUEUE, grace=0)
    (stopped,) = reconciler.reconcile()
    assert stopped.orphan.job.job_id == job.job_id == TASK.training_job_name(1)


@pytest.mark.parametrize(
    ("stamp", "answered", "now", "ours"),
    [
        (1000.0, 3400.0, 1000.0 + 400, 1000.0 - 2000),  # created 2400 s before it answered
        (3400.5, 3400.0, 1000.0, 1000.0),  # created within the Date's second: not after now
        (5000.0, None, 1000.0, 5000.0),  # no Date: the clocks are taken to agree
    ],
    ids=["moved by the skew", "never after now", "no date"],
)
def test_a_services_time_on_our_clock(
    stamp: float, answered: float | None, now: float, ours: float
) -> None:
    assert on_our_clock(stamp, answered, now) == ours


def test_the_date_of_an_answer_is_read_when_there_is_one() -> None:
    dated = {"ResponseMetadata": {"HTTPHeaders": {"date": "Thu, 01 Jan 2026 00:00:10 GMT"}}}
    assert answered_at(dated) == 1767225610.0
    assert answered_at({}) is None
    assert answered_at({"ResponseMetadata": {"HTTPHeaders": {"date": "yesterday"}}}) is None
