"""QuotaTrainingOperator's failure messages not covered in test_operator.py, word for word."""

from __future__ import annotations

import re

import pytest

from tests.airflow.conftest import TaskLog, reclaim_once_running
from tests.airflow.test_operator import run_task
from tests.emulator.conftest import Endpoint, training_payload

pytestmark = pytest.mark.usefixtures("airflow_db")

MODES = pytest.mark.parametrize("deferrable", [True, False], ids=["deferred", "in the worker"])


def borrower(dag_id: str, **options: object) -> tuple[str, object]:
    """A vision task of 3 p4d (one borrowed from nlp) that an nlp job will reclaim."""
    return run_task(
        dag_id,
        quota_share="vision",
        training_config=training_payload(3),
        tags={"emulator:duration-seconds": "120"},
        **options,
    )


@MODES
def test_a_job_preempted_past_its_retries_raises_preemption_retries_exhausted(
    running_endpoint: Endpoint, deferrable: bool, task_log: TaskLog
) -> None:
    reclaimer = reclaim_once_running(running_endpoint, f"exhausted_{deferrable}-train")
    state, _ = borrower(f"exhausted_{deferrable}", deferrable=deferrable, preemption_retries=0)
    reclaimer.join()
    assert state == "failed"
    log = task_log()
    assert "PreemptionRetriesExhausted" in log
    assert re.search(
        r"service job \S+ FAILED: PREEMPTION_RETRIES_EXHAUSTED: .+; SageMaker FailureReason: ", log
    ), log[-3000:]
    assert "retries left: 0" in log


@MODES
def test_stop_on_preemption_raises_service_job_preempted(
    running_endpoint: Endpoint, deferrable: bool, task_log: TaskLog
) -> None:
    reclaimer = reclaim_once_running(running_endpoint, f"stopped_{deferrable}-train")
    state, _ = borrower(f"stopped_{deferrable}", deferrable=deferrable, stop_on_preemption=True)
    reclaimer.join()
    assert state == "failed"
    log = task_log()
    assert "ServiceJobPreempted" in log
    assert re.search(r"service job \S+ was preempted: ", log), log[-3000:]


@MODES
def test_the_wait_limit_raises_service_job_timeout(
    endpoint: Endpoint, deferrable: bool, task_log: TaskLog
) -> None:
    state, _ = run_task(f"limited_{deferrable}", deferrable=deferrable, max_wait_seconds=0.3)
    assert state == "failed"
    log = task_log()
    assert "ServiceJobTimeout" in log
    # UNKNOWN if the limit ran out before the first poll was answered (a busy machine)
    assert re.search(
        r"service job \S+ still (SUBMITTED|UNKNOWN) after 0.3 s \(max_wait_seconds\)", log
    )


def test_an_instance_type_the_queue_lacks_raises_cannot_fit(
    endpoint: Endpoint, task_log: TaskLog
) -> None:
    state, _ = run_task("trn", training_config=training_payload(1, "ml.trn1.32xlarge"))
    assert state == "failed"
    log = task_log()
    assert "CannotFit" in log
    assert (
        "job queue ml-training has no ml.trn1.32xlarge; it has ml.g5.12xlarge, "
        "ml.p4d.24xlarge; share nlp can hold 4 ml.g5.12xlarge, 4 ml.p4d.24xlarge"
    ) in log


@pytest.mark.parametrize(
    "value", [0, -3, 2.5, True, "10"], ids=["zero", "negative", "float", "bool", "str"]
)
def test_max_poll_failures_must_be_a_whole_number_of_polls(value: object) -> None:
    from airflow_quota_provider.operators.batch import QuotaTrainingOperator

    with pytest.raises(ValueError) as raised:
        QuotaTrainingOperator(
            task_id="train",
            job_queue="q",
            quota_share="nlp",
            training_config={},
            max_poll_failures=value,  # type: ignore[arg-type]
        )
    assert str(raised.value) == (
        "max_poll_failures must be a whole number >= 1 (polls in a row) or None "
        f"(never give up), got {value!r}"
    )
