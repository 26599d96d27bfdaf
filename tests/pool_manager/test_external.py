"""A preempted task holds its slots until its SageMaker training job has stopped: the
manager's watcher against the local endpoint over real HTTP, and its records."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from airflow_quota_provider.airflow_pools.database import engine_for
from airflow_quota_provider.airflow_pools.decide import Stop, decide
from airflow_quota_provider.airflow_pools.external import (
    ExternalWorkUnknown,
    SageMakerTrainingJobs,
    Victim,
)
from airflow_quota_provider.airflow_pools.observe import _held_by_external_work
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.airflow_pools.tasks import TaskState
from airflow_quota_provider.core import PreemptionKind
from tests.emulator.conftest import Endpoint, make_client, serve, training_payload
from tests.pool_manager.test_decide import FLEET, NLP, RUNNING, VISION, key, task

NOW = 1_800_000_000.0
AT = datetime.fromtimestamp(NOW, UTC)
VICTIM = Victim(key("v-borrow"), 1)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    yield from serve(None)


def start_training(endpoint: Endpoint, victim: Victim, seconds: int = 600) -> None:
    request = training_payload(1, TrainingJobName=victim.training_job_name)
    request["Tags"] = [{"Key": "emulator:duration-seconds", "Value": str(seconds)}]
    endpoint.sagemaker.create_training_job(**request)


def test_a_victim_holds_while_its_training_job_runs_or_stops(endpoint: Endpoint) -> None:
    jobs = SageMakerTrainingJobs(endpoint.sagemaker)
    other = Victim(key("never-trained"), 1)
    assert jobs.running({VICTIM, other}) == set()
    start_training(endpoint, VICTIM)
    assert jobs.running({VICTIM, other}) == {VICTIM}
    endpoint.sagemaker.stop_training_job(TrainingJobName=VICTIM.training_job_name)
    assert jobs.running({VICTIM}) == {VICTIM}, "Stopping still holds its instances"
    endpoint.advance(5)
    assert jobs.running({VICTIM}) == set()
    # another try of the same task is another job
    assert jobs.running({Victim(VICTIM.key, 2)}) == set()


def test_a_victims_job_left_in_progress_is_stopped_by_the_manager(endpoint: Endpoint) -> None:
    """The try's own stop can be cut short (a trigger's ``on_kill`` cancelled again by
    Airflow's triggerer): a job still ``InProgress`` ``stop_after`` seconds after the
    manager first saw it so is stopped; a job already stopping is left to stop."""
    clock = [100.0]
    jobs = SageMakerTrainingJobs(endpoint.sagemaker, stop_after=20, clock=lambda: clock[0])
    stopping = Victim(key("v-stopping"), 1)
    start_training(endpoint, VICTIM)
    start_training(endpoint, stopping)
    endpoint.sagemaker.stop_training_job(TrainingJobName=stopping.training_job_name)

    def status(victim: Victim) -> str:
        name = victim.training_job_name
        return str(
            endpoint.sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"]
        )

    assert jobs.running({VICTIM, stopping}) == {VICTIM, stopping}
    clock[0] += 19
    assert jobs.running({VICTIM}) == {VICTIM}
    assert status(VICTIM) == "InProgress"
    clock[0] += 1
    assert jobs.running({VICTIM}) == {VICTIM}, "Stopping still holds its instances"
    assert status(VICTIM) == "Stopping"
    endpoint.advance(5)
    assert jobs.running({VICTIM, stopping}) == set()
    assert status(VICTIM) == "Stopped"


def test_an_endpoint_that_does_not_answer_is_not_taken_for_a_stopped_job() -> None:
    jobs = SageMakerTrainingJobs(make_client("http://127.0.0.1:9", "sagemaker"))
    with pytest.raises(ExternalWorkUnknown, match="DescribeTrainingJob"):
        jobs.running({VICTIM})


def test_the_manager_keeps_a_victims_slots_until_its_job_stopped(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'manager.db'}")
    stop = Stop(VICTIM.key, VISION, PreemptionKind.RECLAIM, key("n"), False, "note", 6, 0.0, 1)
    store.record_preemption(stop, AT)
    start_training(endpoint, VICTIM)
    jobs = SageMakerTrainingJobs(endpoint.sagemaker)
    owner, own = task("n", NLP, 8, weight=5), task("v-own", VISION, 8, RUNNING)
    # cleared and deferred: Airflow shows the victim waiting again at once
    cleared = [own, task("v-borrow", VISION, 6), owner]
    seen = _held_by_external_work(FLEET, cleared, store, jobs, NOW)
    assert [(t.key.task_id, t.state) for t in seen] == [
        ("v-own", RUNNING),
        ("v-borrow", TaskState.RESTARTING),
        ("n", TaskState.SCHEDULED),
    ]
    plan = decide(FLEET, seen, NOW)
    assert plan.start == () and plan.slots[NLP] == 0, "nlp's pool opens no slot yet"
    # not even listed by Airflow (no state yet): held from the record
    (held,) = [
        t
        for t in _held_by_external_work(FLEET, [own, owner], store, jobs, NOW)
        if t.key == VICTIM.key
    ]
    assert (held.pool, held.slots, held.state) == (VISION, 6, TaskState.RESTARTING)
    # its job stopped: released for good, the owner's pool opens
    endpoint.sagemaker.stop_training_job(TrainingJobName=VICTIM.training_job_name)
    endpoint.advance(5)
    seen = _held_by_external_work(FLEET, cleared, store, jobs, NOW + 10)
    assert [t.state for t in seen] == [RUNNING, TaskState.SCHEDULED, TaskState.SCHEDULED]
    assert store.unreleased(AT) == []
    assert [start.key for start in decide(FLEET, seen, NOW + 10).start] == [key("n")]


def test_a_victim_cleared_before_its_try_created_its_job_holds_once_the_job_shows(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    """Cleared while its worker was still starting (``running``, no job yet): Airflow shows
    it ``restarting`` until its process is gone, and the process may create its job
    meanwhile (and defer, leaving nothing to stop it). Finding no job while Airflow still
    shows that try is not its end: once the process is gone and the job shows, the victim
    holds its slots again, and the owner's pool stays shut. (The Airflow 3.2 randomized
    training run: two jobs refused with ResourceLimitExceeded after such a preemption.)"""
    store = Store(f"sqlite:///{tmp_path / 'manager.db'}")
    stop = Stop(VICTIM.key, VISION, PreemptionKind.RECLAIM, key("n"), False, "note", 6, 0.0, 1)
    store.record_preemption(stop, AT)
    jobs = SageMakerTrainingJobs(endpoint.sagemaker)
    owner, own = task("n", NLP, 8, weight=5), task("v-own", VISION, 8, RUNNING)
    restarting = replace(task("v-borrow", VISION, 6, TaskState.RESTARTING), try_number=1)
    seen = _held_by_external_work(FLEET, [own, restarting, owner], store, jobs, NOW)
    assert [t.state for t in seen] == [RUNNING, TaskState.RESTARTING, TaskState.SCHEDULED]
    assert [row.key for row in store.unreleased(AT)] == [VICTIM.key], "still watched"
    # the try created its job before its process was told to stop, then ended
    start_training(endpoint, VICTIM)
    waiting = replace(task("v-borrow", VISION, 6), try_number=1)
    seen = _held_by_external_work(FLEET, [own, waiting, owner], store, jobs, NOW + 2)
    assert [t.state for t in seen] == [RUNNING, TaskState.RESTARTING, TaskState.SCHEDULED]
    plan = decide(FLEET, seen, NOW + 2)
    assert plan.start == () and plan.slots[NLP] == 0, "nlp's pool opens no slot yet"
    # a try that ended with no job at all is released
    other = Victim(key("v-other"), 1)
    store.record_preemption(replace(stop, key=other.key), AT)
    _held_by_external_work(FLEET, [own, owner], store, jobs, NOW + 3)
    assert [row.key for row in store.unreleased(AT)] == [VICTIM.key]


def test_a_database_of_an_earlier_version_gains_the_new_columns(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with engine_for(url).begin() as connection:
        connection.execute(
            text(
                "CREATE TABLE quota_preemption (id INTEGER PRIMARY KEY, at DATETIME, "
                "pool VARCHAR(256), kind VARCHAR(32), preemptor TEXT, fails BOOLEAN, "
                "note TEXT, slots INTEGER, started DATETIME, dag_id VARCHAR(250), "
                "run_id VARCHAR(250), task_id VARCHAR(250), map_index INTEGER)"
            )
        )
        connection.execute(
            text(
                "INSERT INTO quota_preemption (at, pool, kind, preemptor, fails, note, slots, "
                "dag_id, run_id, task_id, map_index) VALUES ('2026-12-01 00:00:00', 'p', "
                "'RECLAIM', 'x', 0, 'n', 2, 'train', 'run-1', 'old', -1)"
            )
        )
    store = Store(url)
    assert store.preemptions() == {key("old"): 1}
    (row,) = store.unreleased(datetime(2026, 11, 1, tzinfo=UTC))
    assert (row.try_number, row.released_at) == (None, None)
    store.record_preemption(replace(_stop(), try_number=3), AT)
    assert [r.try_number for r in store.unreleased(AT)] == [3]


def _stop() -> Stop:
    return Stop(VICTIM.key, VISION, PreemptionKind.RECLAIM, key("n"), False, "note", 6)


def test_a_victims_training_job_is_tagged_with_why_before_its_task_is_cleared(
    endpoint: Endpoint,
) -> None:
    from airflow_quota_provider.hooks.sagemaker import PREEMPTED_TAG, TrainingTries

    jobs = SageMakerTrainingJobs(endpoint.sagemaker)
    start_training(endpoint, VICTIM)
    jobs.tell(VICTIM, "Cleared by the quota pool manager for x (RECLAIM): share nlp needs 1 gpu")
    job = endpoint.sagemaker.describe_training_job(TrainingJobName=VICTIM.training_job_name)
    assert TrainingTries(endpoint.sagemaker).preemption(job) == (
        "Cleared by the quota pool manager for x  RECLAIM : share nlp needs 1 gpu"
    )
    assert PREEMPTED_TAG == "quota:preempted"
    jobs.tell(Victim(key("never-trained"), 1), "no job, nothing to tag")  # does not raise
    down = SageMakerTrainingJobs(make_client("http://127.0.0.1:9", "sagemaker"))
    down.tell(VICTIM, "the endpoint is down: the preemption goes on")  # does not raise
