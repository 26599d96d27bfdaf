"""Every error of the package survives pickling with its fields; which ones are permanent.

Airflow sends a task's exception between processes (the task runner, the
triggerer) by pickling it; an error whose constructor takes more than its
message would otherwise fail to unpickle or lose its fields.
"""

from __future__ import annotations

import inspect
import pickle
from types import ModuleType
from typing import Any

import pytest

from airflow_quota_provider import exceptions as errors
from airflow_quota_provider.aws_batch import errors as aws_errors
from airflow_quota_provider.aws_batch.errors import AwsCallFailed
from airflow_quota_provider.exceptions import (
    AdmissionRefused,
    AmbiguousJob,
    CannotFit,
    ConfigError,
    HistoryNotRecorded,
    InvalidPriority,
    InvalidTrainingConfig,
    JobCandidate,
    PollingFailed,
    PreemptionRetriesExhausted,
    Problem,
    QuotaError,
    ScenarioError,
    ServiceJobError,
    ServiceJobFailed,
    ServiceJobPreempted,
    ServiceJobTimeout,
    ShareUnavailable,
    TrainingJobError,
    TrainingJobFailed,
    TrainingJobTimeout,
    TrainingJobUnreadable,
    UnknownJob,
    UnknownQueue,
    ViewError,
)
from airflow_quota_provider.sync import errors as sync_errors
from airflow_quota_provider.sync.errors import ApplyRefused, SyncError

PROBLEMS = [Problem("shares[0].borrow_limit", "must be an integer >= -1, got 'x'")]
P4D = "ml.p4d.24xlarge"

EVERY_ERROR: dict[str, Exception] = {
    "QuotaError": QuotaError("plain"),
    "ConfigError": ConfigError(PROBLEMS, "quota.yaml"),
    "ScenarioError": ScenarioError(PROBLEMS),
    "AdmissionRefused": AdmissionRefused("job-1", "INVALID_DEMAND", "no units"),
    "ShareUnavailable": ShareUnavailable("job-1", "UNKNOWN_SHARE", "no share x", "x", "q"),
    "CannotFit": CannotFit("job-1", "EXCEEDS_MAX_QUOTA", "too big", {P4D: 5}, {P4D: 4}),
    "InvalidPriority": InvalidPriority("job-1", "INVALID_PRIORITY", "0..9999", 10_000),
    "InvalidTrainingConfig": InvalidTrainingConfig(["Unknown member 'ResourceConfg'"]),
    "ServiceJobError": ServiceJobError("it did not succeed", "id-1", "a reason"),
    "ServiceJobFailed": ServiceJobFailed("failed", "id-1", "reason", "AlgorithmError: oom"),
    "PreemptionRetriesExhausted": PreemptionRetriesExhausted(
        "failed", "id-1", "PREEMPTION_RETRIES_EXHAUSTED: 3", None
    ),
    "ServiceJobPreempted": ServiceJobPreempted("preempted", "id-1", "reclaimed"),
    "ServiceJobTimeout": ServiceJobTimeout("still waiting", "id-1", None),
    "PollingFailed": PollingFailed("no answer", "id-1", None),
    "TrainingJobError": TrainingJobError("did not complete", "job-t1", None),
    "TrainingJobFailed": TrainingJobFailed("ended Failed", "job-t1", "AlgorithmError: x"),
    "TrainingJobTimeout": TrainingJobTimeout("still running", "job-t1", None),
    "TrainingJobUnreadable": TrainingJobUnreadable("no answer", "job-t1", None),
    "ViewError": ViewError("cannot answer"),
    "UnknownQueue": UnknownQueue("nope", ["ml-training", "other"]),
    "UnknownJob": UnknownJob("ghost", ["ml-training"]),
    "AmbiguousJob": AmbiguousJob(
        "twin", [JobCandidate("id-2", "RUNNING", "q"), JobCandidate("id-1", "FAILED", "q")]
    ),
    "HistoryNotRecorded": HistoryNotRecorded("gpus", "no manager cycled yet"),
    "SyncError": SyncError("sync failed"),
    "AwsCallFailed": AwsCallFailed("CreateQuotaShare", "ClientException", "no such queue"),
    "ApplyRefused": ApplyRefused(["delete quota share x", "lower capacity"]),
}


def _errors_defined_in(*modules: ModuleType) -> set[str]:
    return {
        name
        for module in modules
        for name, kind in vars(module).items()
        if inspect.isclass(kind)
        and not name.startswith("_")
        and issubclass(kind, BaseException)
        and kind.__module__ == module.__name__
    }


def test_the_table_has_every_error_of_the_package() -> None:
    assert set(EVERY_ERROR) == _errors_defined_in(errors, sync_errors, aws_errors)


@pytest.mark.parametrize("name", sorted(EVERY_ERROR))
def test_an_error_survives_pickling_with_its_fields(name: str) -> None:
    error = EVERY_ERROR[name]
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert (copy.args, str(copy)) == (error.args, str(error))
    assert vars(copy) == vars(error)
    assert vars(error) or name in ("QuotaError", "ViewError", "SyncError")


def test_the_refusal_a_task_fails_with_survives_pickling() -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_quota_provider.refusals import RequestRefused

    cause = EVERY_ERROR["CannotFit"]
    assert isinstance(cause, CannotFit)
    refused = RequestRefused(cause)
    copy = pickle.loads(pickle.dumps(refused))
    assert isinstance(copy, AirflowFailException)
    assert isinstance(copy, RequestRefused)
    assert str(copy) == f"CannotFit: {cause}"
    assert (type(copy.refusal), vars(copy.refusal)) == (CannotFit, vars(cause))


PERMANENT = {
    "AdmissionRefused",
    "ShareUnavailable",  # an unknown share; a DISABLED one may be enabled again
    "CannotFit",
    "InvalidPriority",
    "InvalidTrainingConfig",
}


@pytest.mark.parametrize("name", sorted(EVERY_ERROR))
def test_which_errors_no_retry_can_change(name: str) -> None:
    error: Any = EVERY_ERROR[name]
    assert getattr(error, "permanent", False) is (name in PERMANENT)


def test_a_disabled_share_is_not_permanent() -> None:
    disabled = ShareUnavailable("job-1", "SHARE_DISABLED", "share x is DISABLED", "x", "q")
    assert disabled.permanent is False
    assert pickle.loads(pickle.dumps(disabled)).permanent is False
