"""What a save writes to the ``--state`` file: only what changed, and still all of it.

Each save encodes only the records reached since the last one. The proof
that nothing is missed: after every request of a workload that creates,
changes and deletes every kind of record, the file holds exactly the rows
a save of the whole world would (:func:`encode`), and a restart rebuilds
that same world. The proof that little is written: an SQLite trigger on the
file's table logs every row written, and a change to one record logs one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from airflow_quota_provider.emulator import Emulator
from airflow_quota_provider.emulator.state_file import encode
from tests.emulator.conftest import (
    G5,
    P4D,
    QUEUE,
    Endpoint,
    create_queue,
    create_share,
    make_client,
    submit,
    training_payload,
)
from tests.emulator.test_state import comparable, everything, play, second_half, served

Rows = dict[tuple[str, str], str]


@contextmanager
def endpoint_on(state: Path) -> Iterator[Endpoint]:
    """An endpoint keeping its account in ``state``, :data:`TWO_SHARES` set up if new."""
    with served(state) as (url, emulator):
        yield Endpoint(url, emulator, make_client(url, "batch"), make_client(url, "sagemaker"))


def file_rows(state: Path) -> Rows:
    with closing(sqlite3.connect(state)) as db:
        return {(kind, key): body for kind, key, body in db.execute("SELECT * FROM rows")}


def full_save(emulator: Emulator) -> Rows:
    with emulator.lock:
        return encode(emulator.world)


def differences(saved: Rows, full: Rows) -> list[tuple[str, str]]:
    return sorted(key for key in saved.keys() | full.keys() if saved.get(key) != full.get(key))


class FileChecks:
    """After every API call and clock move: the file holds what a full save would."""

    def __init__(self, endpoint: Endpoint, state: Path) -> None:
        self.endpoint, self.state = endpoint, state
        self.checked: list[str] = []
        for client in (endpoint.batch, endpoint.sagemaker):
            client.meta.events.register("after-call", self._after_call)

    def _after_call(self, model: Any, **_: Any) -> None:
        self.check(model.name)

    def check(self, what: str) -> None:
        saved, full = file_rows(self.state), full_save(self.endpoint.emulator)
        assert differences(saved, full) == [], f"after {what}"
        assert placed(self.endpoint.emulator) == held(self.endpoint.emulator), f"after {what}"
        self.checked.append(what)

    def advance(self, seconds: float) -> None:
        self.endpoint.advance(seconds)
        self.check(f"advance {seconds:g}")


def placed(emulator: Emulator) -> dict[str, Any]:
    """Each job's placement, as the state file saves it."""
    with emulator.lock:
        placements = emulator.world.dispatcher.placements.unnoted().values()
        return {p.job.id: (p.queue_arn, p.job) for p in placements}


def held(emulator: Emulator) -> dict[str, Any]:
    """Each job the queues hold, as the core holds it."""
    jobs: dict[str, Any] = {}
    with emulator.lock:
        for arn, state in emulator.world.dispatcher.states.items():
            jobs.update((job.id, (arn, job)) for job in state.running())
            jobs.update((job.id, (arn, job)) for job in state.waiting())
    return jobs


def spare_queue(batch: Any) -> str:
    """A second quota-managed queue, ``queue``, with its environment, policy and a share."""
    queue_arn = create_queue(batch, capacity=2)
    share_arn = create_share(batch, "solo", 1, strategy="RESERVE")
    batch.update_service_environment(
        serviceEnvironment="env", capacityLimits=[{"capacityUnit": P4D, "maxCapacity": 3}]
    )
    batch.update_quota_share(
        quotaShareArn=share_arn, capacityLimits=[{"capacityUnit": P4D, "maxCapacity": 2}]
    )
    environment = batch.describe_service_environments(serviceEnvironments=["env"])
    environment_arn = environment["serviceEnvironments"][0]["serviceEnvironmentArn"]
    batch.tag_resource(resourceArn=environment_arn, tags={"team": "infra"})
    return queue_arn


def delete_spare_queue(batch: Any, checks: FileChecks) -> None:
    """Its running job is terminated with it, then its environment and policy go."""
    policy = batch.describe_job_queues(jobQueues=["queue"])["jobQueues"][0]["schedulingPolicyArn"]
    batch.update_job_queue(jobQueue="queue", state="DISABLED")
    batch.delete_job_queue(jobQueue="queue")
    checks.advance(5)  # the running job's training job stops
    batch.update_service_environment(serviceEnvironment="env", state="DISABLED")
    batch.delete_service_environment(serviceEnvironment="env")
    batch.delete_scheduling_policy(arn=policy)


def checkpointed(instances: int, name: str) -> dict[str, Any]:
    return training_payload(instances, CheckpointConfig={"S3Uri": f"s3://bucket/{name}"})


def story(endpoint: Endpoint, checks: FileChecks) -> dict[str, str]:
    """Every kind of record created, changed and deleted; returns job ids by name."""
    batch, sagemaker = endpoint.batch, endpoint.sagemaker
    spare_queue(batch)
    ids = {
        "spare": batch.submit_service_job(
            jobName="spare",
            jobQueue="queue",
            quotaShareName="solo",
            serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=json.dumps(checkpointed(1, "spare")),
            tags={"emulator:duration-seconds": "900"},
        )["jobId"],
        "borrower": submit(
            batch, "vision", name="borrower", duration=900, payload=checkpointed(4, "borrower")
        ),
    }
    checks.advance(120)
    ids["owner"] = submit(batch, "nlp", 2, name="owner", duration=300, clientToken="owner-token")
    ids["g5"] = submit(
        batch,
        "vision",
        name="g5",
        duration=400,
        payload=training_payload(1, G5),
        timeoutConfig={"attemptDurationSeconds": 350},
    )
    ids["later"] = submit(batch, "nlp", name="later", duration=600)
    ids["dropped"] = submit(batch, "nlp", name="dropped", duration=600)
    checks.advance(1.5)  # the owner reclaims: the borrower is being preempted
    batch.update_service_job(jobId=ids["g5"], schedulingPriority=3)  # a running job
    checks.advance(30)
    batch.update_service_job(jobId=ids["later"], schedulingPriority=5)  # a waiting one
    batch.terminate_service_job(jobId=ids["dropped"], reason="not needed")
    queue_arn = batch.describe_job_queues(jobQueues=[QUEUE])["jobQueues"][0]["jobQueueArn"]
    batch.tag_resource(resourceArn=queue_arn, tags={"owner": "ml-platform", "cost": "1"})
    batch.untag_resource(resourceArn=queue_arn, tagKeys=["cost"])
    job_arn = batch.describe_service_job(jobId=ids["owner"])["jobArn"]
    batch.tag_resource(resourceArn=job_arn, tags={"stage": "tuning"})
    direct = sagemaker.create_training_job(
        **training_payload(1, G5, TrainingJobName="direct"),
        Tags=[{"Key": "emulator:duration-seconds", "Value": "500"}],
    )
    sagemaker.add_tags(ResourceArn=direct["TrainingJobArn"], Tags=[{"Key": "k", "Value": "v"}])
    checks.advance(70)
    sagemaker.stop_training_job(TrainingJobName="direct")
    delete_spare_queue(batch, checks)
    checks.advance(250)
    return ids


def described(endpoint: Endpoint, ids: dict[str, str]) -> dict[str, Any]:
    jobs = {name: endpoint.batch.describe_service_job(jobId=i) for name, i in ids.items()}
    for job in jobs.values():
        job.pop("ResponseMetadata")
    return jobs


def test_after_every_request_the_file_holds_what_a_full_save_would_and_a_restart_rebuilds_it(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state.sqlite"
    with endpoint_on(state) as endpoint:
        checks = FileChecks(endpoint, state)
        ids = story(endpoint, checks)
        before = described(endpoint, ids)
    assert len(checks.checked) > 30
    saved = file_rows(state)
    with endpoint_on(state) as endpoint:
        assert endpoint.emulator.restored
        # Every kind of row the world takes is in the file, so every kind was compared.
        assert {kind for kind, _ in saved} == {*endpoint.emulator.world.tables(), "meta"}
        assert differences(full_save(endpoint.emulator), saved) == []
        assert described(endpoint, ids) == before
        checks = FileChecks(endpoint, state)
        checks.advance(3000)
        final = {name: job["status"] for name, job in described(endpoint, ids).items()}
    assert final == {
        "spare": "FAILED",  # terminated with its queue
        "borrower": "SUCCEEDED",
        "owner": "SUCCEEDED",
        "g5": "FAILED",  # timed out
        "later": "SUCCEEDED",
        "dropped": "FAILED",  # terminated
    }


def log_writes(state: Path) -> None:
    """From now on, the file itself logs every row written or deleted (an SQLite trigger)."""
    with closing(sqlite3.connect(state)) as db:
        db.executescript(
            """
            CREATE TABLE writes (done TEXT, kind TEXT, key TEXT);
            CREATE TRIGGER log_write AFTER INSERT ON rows
                BEGIN INSERT INTO writes VALUES ('write', new.kind, new.key); END;
            CREATE TRIGGER log_delete AFTER DELETE ON rows
                BEGIN INSERT INTO writes VALUES ('delete', old.kind, old.key); END;
            """
        )


def written(state: Path) -> list[tuple[str, str, str]]:
    """The rows written since last asked, in order."""
    with closing(sqlite3.connect(state)) as db, db:
        rows = db.execute("SELECT done, kind, key FROM writes ORDER BY rowid").fetchall()
        db.execute("DELETE FROM writes")
    return [tuple(row) for row in rows]


def test_a_change_to_one_record_writes_that_record_and_a_read_writes_nothing(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state.sqlite"
    with endpoint_on(state) as endpoint:
        batch = endpoint.batch
        ids = [submit(batch, "nlp", name=f"job-{n}", duration=600) for n in range(40)]
        endpoint.advance(10)  # 4 run on the 4 p4d, 36 wait
        log_writes(state)

        job_arn = batch.describe_service_job(jobId=ids[0])["jobArn"]
        batch.tag_resource(resourceArn=job_arn, tags={"k": "v"})
        assert written(state) == [("write", "job", ids[0])]

        batch.list_service_jobs(jobQueue=QUEUE, jobStatus="RUNNABLE")
        batch.describe_service_job(jobId=ids[5])
        assert written(state) == []

        batch.update_service_job(jobId=ids[20], schedulingPriority=9)
        assert sorted(written(state)) == [
            ("write", "job", ids[20]),
            ("write", "placement", ids[20]),
        ]

        batch.terminate_service_job(jobId=ids[30], reason="not needed")
        assert sorted(written(state)) == [
            ("delete", "placement", ids[30]),
            ("write", "job", ids[30]),
        ]

        new = submit(batch, "vision", name="new", duration=600, clientToken="new-token")
        writes = written(state)
        assert sorted(writes)[:3] == [
            ("write", "client-token", "new-token"),
            ("write", "job", new),
            ("write", "meta", "last_submitted"),
        ]
        assert [kind for _, kind, _ in sorted(writes)[3:]] == ["timer"]  # its entry into the queue


def test_a_save_that_fails_leaves_the_file_as_it_was_and_the_next_one_writes_what_it_missed(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state.sqlite"
    with endpoint_on(state) as endpoint:
        batch = endpoint.batch
        first = submit(batch, "nlp", name="first", duration=600)
        before = file_rows(state)
        with closing(sqlite3.connect(state)) as db:
            db.execute(
                "CREATE TRIGGER full BEFORE INSERT ON rows "
                "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
            )
        with pytest.raises(ClientError, match="the emulator failed"):
            submit(batch, "vision", name="second", duration=600)
        assert file_rows(state) == before  # nothing of that request, not even part of it
        jobs = batch.list_service_jobs(jobQueue=QUEUE, jobStatus="SUBMITTED")["jobSummaryList"]
        second = next(job["jobId"] for job in jobs if job["jobName"] == "second")
        with closing(sqlite3.connect(state)) as db:
            db.execute("DROP TRIGGER full")
        batch.update_service_job(jobId=first, schedulingPriority=1)
        assert differences(file_rows(state), full_save(endpoint.emulator)) == []
    with endpoint_on(state) as endpoint:
        assert endpoint.batch.describe_service_job(jobId=second)["jobName"] == "second"


FORMAT_1 = Path(__file__).with_name("state_format_1.jsonl")
"""Rows an emulator of format 1 (each queue's jobs in one row) saved after ``first_half()``."""


def test_a_format_1_file_is_rewritten_at_start_and_plays_on_as_if_never_stopped(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state.sqlite"
    rows = [json.loads(line) for line in FORMAT_1.read_text().splitlines()]
    with closing(sqlite3.connect(state)) as db, db:
        db.execute("CREATE TABLE rows (kind TEXT, key TEXT, body TEXT, PRIMARY KEY (kind, key))")
        db.executemany("INSERT INTO rows VALUES (?, ?, ?)", rows)
    with served(state) as (url, emulator):
        assert emulator.restored
        migrated = file_rows(state)
        assert migrated["meta", "format"] == "2"
        assert "queue-state" not in {kind for kind, _ in migrated}
        assert differences(migrated, full_save(emulator)) == []
        second_half(url)
        after = everything(url)
    _, uninterrupted = play(None, restart=False)
    assert comparable(after) == comparable(uninterrupted)
