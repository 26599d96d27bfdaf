"""Preemptible SageMaker training under the pool manager, end to end.

Real api-server, scheduler, dag-processor, triggerer and ``airflow-quota
pool-manager --watch-sagemaker``; the tasks (``dags/pools_training.py``) run
SageMaker training jobs directly against the local endpoint, whose
``--instance-limit`` (the account's limit) is the fleet's 8 p4d. A story first
(a borrower reclaimed, an in-share preemption by priority; the preempted tasks
resume from their checkpoints), then randomized runs of 27 tasks. The figures
that matter come from AWS's side: no ``ResourceLimitExceeded``, no job left
running, never two jobs of one task instance at once.

Time: about 5 min on 2 cores (``tests/DURATIONS.md``): the story about 110 s, the
randomized run about 200 s, the stack 24 s. The 27 tasks train 10 to 20 s each (never under
10 s, see ``DURATION``) on 8 p4d: the run is bound by the account's capacity. It had 54 tasks:
the same paths again, twice as long.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_quota_provider.airflow_pools.external import TRIGGER_ON_KILL
from airflow_quota_provider.core.task_key import TaskKey
from airflow_quota_provider.demo.processes import wait_for
from airflow_quota_provider.demo.stack import Stack
from airflow_quota_provider.hooks.sagemaker import PREEMPTED_TAG
from airflow_quota_provider.versions import airflow_version
from tests.emulator.conftest import make_client
from tests.pool_manager.conftest import HERE, managed_stack, trigger
from tests.pool_manager.test_sensor import task_log
from tests.postgres import postgres_database

pytestmark = pytest.mark.slow
TEAMS = ("a", "b", "c")
# emulated seconds of work, 60x faster than real; at least 10 s real, as Airflow 3.3.2 fails
# a deferred task whose trigger fires before the scheduler has seen its worker exit
# (apache/airflow#67287)
DURATION = {"a": 900, "b": 600, "c": 600}
CHECKPOINT_EVERY = 60
RUNS_PER_TEAM = 3
TASKS = 3 * RUNS_PER_TEAM * len(TEAMS)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("pool-manager-training")
    dag_ids = tuple(f"training_{team}" for team in TEAMS)
    for database in postgres_database():
        with managed_stack(
            workdir,
            HERE / "fleet_training.yaml",
            dag_ids,
            database_url=database,
            emulator_args=("--instance-limit", "ml.p4d.24xlarge=8"),
            manager_args=("--watch-sagemaker",),
        ) as stack:
            yield stack


def sagemaker(stack: Stack) -> Any:
    return make_client(stack.emulator_url, "sagemaker")


def all_jobs(stack: Stack) -> list[dict[str, Any]]:
    client = sagemaker(stack)
    summaries, kwargs = [], {"MaxResults": 100}
    while True:
        page = client.list_training_jobs(**kwargs)
        summaries += page["TrainingJobSummaries"]
        if not page.get("NextToken"):
            break
        kwargs["NextToken"] = page["NextToken"]
    jobs = []
    for summary in summaries:
        job = client.describe_training_job(TrainingJobName=summary["TrainingJobName"])
        tags = client.list_tags(ResourceArn=job["TrainingJobArn"])["Tags"]
        job["tags"] = {t["Key"]: t["Value"] for t in tags}
        jobs.append(job)
    return jobs


def create_outcomes(stack: Stack) -> dict[str, int]:
    with urllib.request.urlopen(f"{stack.emulator_url}/_emulator/stats") as answer:
        stats = json.load(answer)
    return dict(stats["operations"].get("sagemaker.CreateTrainingJob", {}))


def finish(stack: Stack, runs: list[tuple[str, str]], timeout: float) -> None:
    def finished() -> bool:
        states = [stack.api.run_state(dag_id, run_id) for dag_id, run_id in runs]
        return all(state in ("success", "failed") for state in states)

    wait_for("every run to finish", finished, timeout, stack.processes, every=3)


def results(stack: Stack, runs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    found = []
    for dag_id, run_id in runs:
        answer = stack.api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
        for ti in answer["task_instances"]:
            xcom = None
            if ti["state"] == "success":
                path = (
                    f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{ti['task_id']}"
                    "/xcomEntries/return_value"
                )
                xcom = stack.api.get(path)["value"]
            found.append({**ti, "xcom": xcom})
    return found


def duplicate_jobs(jobs: list[dict[str, Any]]) -> tuple[int, int]:
    """Of these training jobs (with their ``tags``): how many tries have two, and how
    many times a task instance's next job was created before its previous one ended."""
    by_task: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    per_try: Counter[tuple[str, str, str, str]] = Counter()
    for job in jobs:
        tags = job["tags"]
        key = (tags["airflow:dag_id"], tags["airflow:run_id"], tags["airflow:task_id"])
        by_task[key].append(job)
        per_try[(*key, tags["airflow:try_number"])] += 1
    overlaps = 0
    for task_jobs in by_task.values():
        task_jobs.sort(key=lambda job: job["CreationTime"])
        for earlier, later in itertools.pairwise(task_jobs):
            ended = earlier.get("TrainingEndTime") or earlier["LastModifiedTime"]
            overlaps += later["CreationTime"] < ended
    return sum(1 for count in per_try.values() if count > 1), overlaps


def redone_seconds(result: dict[str, Any], duration: float) -> float:
    """Training time spent beyond the work itself: what preemptions made it redo."""
    return float(result["run_seconds"]) - duration


def test_a_reclaimed_and_an_in_share_preempted_task_resume_from_their_checkpoints(
    stack: Stack,
) -> None:
    api = stack.api
    # a trains on 7 p4d while it owns 4: it borrows b's and c's idle instances
    a_run = trigger(api, "training_a", DURATION["a"])
    wait_for(
        "a to borrow", lambda: running_instances(stack, "training_a") == 7, 120, stack.processes
    )
    # b wants its own 2 back, and c's first run takes its own 2: a's borrowed jobs are reclaimed
    b_run = trigger(api, "training_b", DURATION["b"])
    c_first = trigger(api, "training_c", DURATION["c"])
    # c (LEND, in-share preemption) runs its urgent task first, then its pair; once the pair
    # trains, c's second run's urgent task (priority 10) preempts it (priority 5) in-share
    pair = TaskKey("training_c", c_first, "pair", -1).training_job_name(1)

    def pair_trains() -> bool:
        job = next((j for j in all_jobs(stack) if j["TrainingJobName"] == pair), None)
        return job is not None and job["TrainingJobStatus"] == "InProgress"

    wait_for("c's pair to train", pair_trains, 300, stack.processes)
    c_second = trigger(api, "training_c", DURATION["c"])
    runs = [("training_a", a_run), ("training_b", b_run)]
    runs += [("training_c", c_first), ("training_c", c_second)]
    finish(stack, runs, 600)

    done = results(stack, runs)
    assert {ti["state"] for ti in done} == {"success"}, done
    preempted = [ti for ti in done if ti["xcom"]["preemptions"]]
    kinds = Counter(ti["note"].split("(")[1].split(")")[0] for ti in preempted)
    assert kinds["RECLAIM"] >= 1 and kinds["IN_SHARE"] >= 1, kinds
    jobs = {job["TrainingJobName"]: job for job in all_jobs(stack)}
    for ti in preempted:
        xcom = ti["xcom"]
        duration = DURATION[ti["dag_id"][-1]]
        # every preemption redid less than one checkpoint interval of work
        assert 0 <= redone_seconds(xcom, duration) < CHECKPOINT_EVERY * xcom["preemptions"], xcom
        identity = TaskKey(ti["dag_id"], ti["dag_run_id"], ti["task_id"], -1)
        first = jobs[identity.training_job_name(1)]
        assert first["TrainingJobStatus"] == "Stopped"
        assert first["tags"][PREEMPTED_TAG].startswith("Cleared by the quota pool manager for")
        last = jobs[xcom["training_job_name"]]
        messages = " ".join(t.get("StatusMessage", "") for t in last["SecondaryStatusTransitions"])
        if (first.get("TrainingTimeInSeconds") or 0) >= CHECKPOINT_EVERY:  # it saved one
            assert "Resumed from the checkpoint at s3://bucket/checkpoints/" in messages
        # the task's own logs: the stopped try says why, the next one that it resumes
        first_log = json.dumps(task_log(api, ti["dag_id"], ti["dag_run_id"], ti["task_id"], 1))
        if ti["task_id"] == "small" or airflow_version() >= TRIGGER_ON_KILL:
            assert "this try is preempted: Cleared by the quota pool manager" in first_log
            assert "is kept, and the task's next try resumes from there" in first_log
        # else a deferred try, before Airflow 3.3: nothing of it runs once cleared (no
        # trigger's on_kill); the manager stopped its job, and the task's note says why
        next_log = json.dumps(task_log(api, ti["dag_id"], ti["dag_run_id"], ti["task_id"], 2))
        assert "try 2 resumes from the checkpoint at s3://bucket/checkpoints/" in next_log
    assert create_outcomes(stack).get("ResourceLimitExceeded", 0) == 0


def running_instances(stack: Stack, dag_id: str | None = None) -> int:
    total = 0
    for job in all_jobs(stack):
        holds = job["TrainingJobStatus"] in ("InProgress", "Stopping")
        if holds and (dag_id is None or job["tags"].get("airflow:dag_id") == dag_id):
            total += job["ResourceConfig"]["InstanceCount"]
    return total


def test_randomized_training_never_exceeds_the_account_limit_or_leaves_a_job(
    stack: Stack,
) -> None:
    api = stack.api
    before = create_outcomes(stack)
    shuffle = random.Random(20261204)
    # team a starts alone and borrows the idle instances; b's and c's first runs then
    # reclaim them, whatever order the rest comes in
    rest = [team for team in TEAMS for _ in range(RUNS_PER_TEAM)]
    for first in ("a", "a", "b", "c"):
        rest.remove(first)
    shuffle.shuffle(rest)
    plan = ["a", "a", "b", "c", *rest]
    runs: list[tuple[str, str]] = []
    durations: dict[str, int] = {}
    started = time.monotonic()
    for team in plan:
        # a's first two train longest: they still borrow when b and c come back
        seconds = 1200 if len(runs) < 2 else shuffle.choice([600, 900, 1200])
        run_id = trigger(api, f"training_{team}", seconds)
        runs.append((f"training_{team}", run_id))
        durations[run_id] = seconds
        time.sleep(12 if len(runs) == 2 else shuffle.choice([0, 0, 4, 15]))
    finish(stack, runs, 1200)
    elapsed = time.monotonic() - started

    done = results(stack, runs)
    assert len(done) == TASKS
    states = Counter(ti["state"] for ti in done)
    after = create_outcomes(stack)
    limit_errors = after.get("ResourceLimitExceeded", 0) - before.get("ResourceLimitExceeded", 0)
    ours = {run_id for _, run_id in runs}
    jobs = [job for job in all_jobs(stack) if job["tags"].get("airflow:run_id") in ours]
    left_running = [
        j["TrainingJobName"] for j in jobs if j["TrainingJobStatus"] in ("InProgress", "Stopping")
    ]
    two_jobs_in_a_try, overlaps = duplicate_jobs(jobs)
    preemptions = sum(ti["xcom"]["preemptions"] for ti in done if ti["xcom"])
    redone = [
        redone_seconds(ti["xcom"], durations[ti["dag_run_id"]]) / ti["xcom"]["preemptions"]
        for ti in done
        if ti["xcom"] and ti["xcom"]["preemptions"]
    ]
    print(
        f"\n{TASKS} training tasks in {elapsed:.0f} s: {dict(states)}; {len(jobs)} training jobs; "
        f"{preemptions} preemptions; work redone per preemption median "
        f"{statistics.median(redone) if redone else 0:.0f} s (checkpoint every "
        f"{CHECKPOINT_EVERY} s); ResourceLimitExceeded {limit_errors}; jobs left running "
        f"{len(left_running)}; tries with two jobs {two_jobs_in_a_try}; one task's jobs "
        f"overlapping {overlaps}"
    )
    assert states == {"success": TASKS}
    assert limit_errors == 0
    assert left_running == []
    assert two_jobs_in_a_try == 0 and overlaps == 0
    assert preemptions > 0, "the run must exercise preemption"
    # share b is not preemptible: its tasks borrow, and a reclaim takes others or waits
    b_tasks = [ti for ti in done if ti["dag_id"] == "training_b"]
    assert all(ti["xcom"]["preemptions"] == 0 and not ti["note"] for ti in b_tasks), b_tasks
    assert all(seconds < CHECKPOINT_EVERY for seconds in redone), redone
