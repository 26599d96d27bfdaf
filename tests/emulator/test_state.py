"""``--state FILE``: a restarted emulator has every resource and job, and time goes on from there.

The proof of "running jobs continue from where the clock says they are": the
same story played once with a restart in the middle and once without ends
with the same statuses, attempts and timestamps, to the millisecond.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from airflow_quota_provider.cli import main
from airflow_quota_provider.emulator import (
    Emulator,
    EmulatorOptions,
    EmulatorServer,
    local_endpoint,
)
from airflow_quota_provider.emulator.bootstrap import apply_config
from airflow_quota_provider.emulator.state_file import StateFile, StateFileError
from tests.emulator.conftest import (
    G5,
    P4D,
    QUEUE,
    TWO_SHARES,
    list_all_jobs,
    make_client,
    training_payload,
)
from tests.emulator.test_cli import CONFIG

START = 1_800_000_000.0
"""A fixed emulated start, so two runs of a story have the same timestamps."""


@contextmanager
def served(state: Path | None) -> Iterator[tuple[str, Emulator]]:
    emulator = Emulator(EmulatorOptions(time_scale=0, start=START, state=state))
    if not emulator.restored:
        apply_config(emulator, TWO_SHARES)
    with EmulatorServer(emulator) as server:
        yield server.url, emulator


def advance(url: str, seconds: float) -> None:
    request = json.dumps({"advance_seconds": seconds}).encode()
    call = urllib.request.Request(f"{url}/_emulator/clock", data=request, method="POST")
    with urllib.request.urlopen(call) as response:
        response.read()


def _submit(batch: Any, name: str, share: str, instances: int, duration: int, **extra: Any) -> str:
    payload = training_payload(
        instances,
        instance_type=extra.pop("instance_type", P4D),
        CheckpointConfig={"S3Uri": f"s3://bucket/checkpoints/{name}"},
    )
    response = batch.submit_service_job(
        jobName=name,
        jobQueue=QUEUE,
        quotaShareName=share,
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=json.dumps(payload),
        tags={
            "emulator:duration-seconds": str(duration),
            "emulator:checkpoint-interval-seconds": "60",
            "team": name,
        },
        clientToken=f"token-{name}",
        **extra,
    )
    job_id: str = response["jobId"]
    return job_id


def first_half(url: str) -> None:
    """Vision borrows, nlp reclaims; a g5 job runs with a timeout; one job waits."""
    batch = make_client(url, "batch")
    _submit(batch, "borrower", "vision", 4, 900)
    advance(url, 120)
    _submit(batch, "owner", "nlp", 2, 300)
    _submit(
        batch,
        "g5",
        "vision",
        1,
        400,
        instance_type=G5,
        timeoutConfig={"attemptDurationSeconds": 350},
    )
    _submit(batch, "later", "nlp", 1, 600)
    queue = batch.describe_job_queues(jobQueues=[QUEUE])["jobQueues"][0]
    batch.tag_resource(resourceArn=queue["jobQueueArn"], tags={"owner": "ml-platform"})
    advance(url, 100)


def second_half(url: str) -> None:
    advance(url, 250)
    advance(url, 3000)


def everything(url: str) -> dict[str, Any]:
    """What a client can read, minus the request ids."""
    batch, sagemaker = make_client(url, "batch"), make_client(url, "sagemaker")
    queue = batch.describe_job_queues(jobQueues=[QUEUE])["jobQueues"][0]
    jobs = list_all_jobs(batch)
    reads: dict[str, Any] = {
        "environments": batch.describe_service_environments(),
        "policies": batch.list_scheduling_policies(),
        "queue": queue,
        "queue tags": batch.list_tags_for_resource(resourceArn=queue["jobQueueArn"]),
        "shares": batch.list_quota_shares(jobQueue=QUEUE),
        "jobs": [batch.describe_service_job(jobId=j["jobId"]) for j in jobs],
        "snapshot": batch.get_job_queue_snapshot(jobQueue=QUEUE),
        "training jobs": [
            sagemaker.describe_training_job(TrainingJobName=t["TrainingJobName"])
            for t in sagemaker.list_training_jobs(MaxResults=100)["TrainingJobSummaries"]
        ],
    }
    for read in reads.values():
        for item in read if isinstance(read, list) else [read]:
            item.pop("ResponseMetadata", None)
    return reads


def comparable(reads: dict[str, Any]) -> list[Any]:
    """Statuses, reasons and timestamps by job name: what two runs must agree on.

    Job ids are random, so the reasons that name one get the job's name instead.
    """
    names = {job["jobId"]: job["jobName"] for job in reads["jobs"]}

    def named(reason: str | None) -> str | None:
        for job_id, name in names.items():
            reason = reason and reason.replace(job_id, name)
        return reason

    return sorted(
        (
            job["jobName"],
            job["status"],
            named(job["statusReason"]),
            job["createdAt"],
            job.get("scheduledAt"),
            job["startedAt"],
            job.get("stoppedAt"),
            [
                (a["startedAt"], a.get("stoppedAt"), named(a.get("statusReason")))
                for a in job["attempts"]
            ],
            job.get("preemptionSummary", {}).get("preemptedAttemptCount"),
        )
        for job in reads["jobs"]
    )


def play(state: Path | None, *, restart: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The story; with ``restart``, the emulator is stopped and started again in the middle."""
    with served(state) as (url, _):
        first_half(url)
        before = everything(url)
        if not restart:
            second_half(url)
            return before, everything(url)
    with served(state) as (url, emulator):
        assert emulator.restored
        assert everything(url) == before
        second_half(url)
        return before, everything(url)


def test_a_restart_loses_nothing_and_jobs_finish_when_they_would_have(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    before, after = play(state, restart=True)
    _, uninterrupted = play(None, restart=False)

    statuses = {job["jobName"]: job["status"] for job in before["jobs"]}
    assert statuses == {
        "borrower": "RUNNABLE",
        "owner": "RUNNING",
        "g5": "RUNNING",
        "later": "RUNNABLE",  # behind the borrower, first in line for idle capacity (FIFO)
    }
    borrower = next(job for job in before["jobs"] if job["jobName"] == "borrower")
    assert borrower["preemptionSummary"]["preemptedAttemptCount"] == 1
    assert comparable(after) == comparable(uninterrupted)
    final = {job["jobName"]: (job["status"], job["statusReason"]) for job in after["jobs"]}
    assert final["g5"] == ("FAILED", "Job attempt duration exceeded timeout (350 seconds)")
    assert {final[name][0] for name in ("borrower", "owner", "later")} == {"SUCCEEDED"}
    resumed = [t for t in after["training jobs"] if "Resumed from the checkpoint" in str(t)]
    assert len(resumed) == 1  # the borrower's second attempt, from its saved work


def test_client_tokens_survive_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    with served(state) as (url, _):
        job_id = _submit(make_client(url, "batch"), "once", "nlp", 1, 60)
    with served(state) as (url, emulator):
        assert emulator.restored
        assert _submit(make_client(url, "batch"), "once", "nlp", 1, 60) == job_id
        assert len(list_all_jobs(make_client(url, "batch"))) == 1


def test_the_clock_resumes_where_it_stopped_not_where_the_wall_clock_is(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    with local_endpoint(TWO_SHARES, time_scale=10_000, state=state) as url:
        time.sleep(0.05)
    saved = StateFile(state).saved_clock()
    assert saved is not None
    time.sleep(0.2)  # 2,000 emulated seconds at that scale, which must not count
    with local_endpoint(TWO_SHARES, time_scale=0, state=state) as url:
        clock = _clock(url)
        # --config was given again and ignored: the account was already there.
        assert len(make_client(url, "batch").list_quota_shares(jobQueue=QUEUE)["quotaShares"]) == 2
    assert clock == pytest.approx(saved, abs=1e-3)


def _clock(url: str) -> float:
    with urllib.request.urlopen(f"{url}/_emulator/clock") as response:
        now: float = json.load(response)["now"]
    return now


def test_a_state_file_of_another_format_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    with local_endpoint(None, time_scale=0, state=state):
        pass
    with sqlite3.connect(state) as db:
        db.execute("UPDATE rows SET body = '99' WHERE kind = 'meta' AND key = 'format'")
    with pytest.raises(StateFileError, match="format 99; this version reads formats 1 and 2"):
        StateFile(state)


def _not_sqlite(tmp_path: Path) -> Path:
    state = tmp_path / "state.sqlite"
    state.write_text("not an SQLite file")
    return state


def _a_row_not_json(tmp_path: Path) -> Path:
    state = tmp_path / "state.sqlite"
    with local_endpoint(TWO_SHARES, time_scale=0, state=state):
        pass
    with closing(sqlite3.connect(state)) as db, db:
        db.execute("UPDATE rows SET body = '{cut short' WHERE kind = 'share'")
    return state


def _a_directory(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    return state


def _in_a_missing_directory(tmp_path: Path) -> Path:
    return tmp_path / "missing" / "state.sqlite"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (_not_sqlite, "file is not a database"),
        (_a_row_not_json, "holds rows this version cannot read (JSONDecodeError: "),
        (_a_directory, "unable to open database file"),
        (_in_a_missing_directory, "state.sqlite.lock: No such file or directory"),
    ],
    ids=["not SQLite", "a row not JSON", "a directory", "in a missing directory"],
)
def test_a_state_file_that_cannot_be_used_is_one_line_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], Path], reason: str
) -> None:
    state = make(tmp_path)
    assert main(["emulator", "--port", "0", "--time-scale", "0", "--state", str(state)]) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"{state}: ")
    assert reason in error
    assert len(error.splitlines()) == 1


def _command() -> list[str]:
    """The installed ``airflow-quota`` script, as users run it."""
    script = Path(sys.executable).with_name("airflow-quota")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "airflow_quota_provider.cli"]


def _start_cli(arguments: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [*_command(), "emulator", *arguments], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("serving Batch and SageMaker on http://127.0.0.1:"), line
    return process, line


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    assert process.wait(timeout=10) == 0


def test_the_command_keeps_its_state_across_a_restart(tmp_path: Path) -> None:
    config, state = tmp_path / "quota.yaml", tmp_path / "state.sqlite"
    config.write_text(CONFIG)
    arguments = ["--port", "0", "--time-scale", "0", "--config", str(config), "--state", str(state)]
    process, line = _start_cli(arguments)
    try:
        url = line.split()[5]
        batch = make_client(url, "batch")
        response = batch.submit_service_job(
            jobName="cli",
            jobQueue="demo",
            quotaShareName="nlp",
            serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=json.dumps(training_payload(2)),
            tags={"emulator:duration-seconds": "100"},
        )
        advance(url, 50)
        assert batch.describe_service_job(jobId=response["jobId"])["status"] == "RUNNING"
    finally:
        _stop(process)
    process, line = _start_cli(arguments)
    try:
        assert line.rstrip().endswith(f"(state restored from {state})")
        url = line.split()[5]
        batch = make_client(url, "batch")
        assert batch.describe_service_job(jobId=response["jobId"])["status"] == "RUNNING"
        advance(url, 58)  # 1 s submitted + 6 s starting + 100 s training + 2 s uploading = 109
        assert batch.describe_service_job(jobId=response["jobId"])["status"] == "RUNNING"
        advance(url, 1)
        job = batch.describe_service_job(jobId=response["jobId"])
        assert (job["status"], job["stoppedAt"] - job["createdAt"]) == ("SUCCEEDED", 109_000)
    finally:
        _stop(process)


def test_a_second_endpoint_on_the_same_file_is_refused_and_the_first_keeps_it(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state.sqlite"
    first = StateFile(state)
    try:
        with pytest.raises(StateFileError, match=rf"another emulator \(pid {os.getpid()}\)"):
            StateFile(state)
    finally:
        first.close()
    StateFile(state).close()  # free again once the first has closed


def test_the_command_refuses_a_state_file_another_endpoint_uses(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    arguments = ["--port", "0", "--time-scale", "0", "--state", str(state)]
    process, _ = _start_cli(arguments)
    try:
        second = subprocess.run(
            [*_command(), "emulator", *arguments], capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 1
        assert f"another emulator (pid {process.pid}) is using this state file" in second.stderr
    finally:
        _stop(process)
    process, _ = _start_cli(arguments)  # a stopped endpoint leaves the file free
    _stop(process)
