"""The GPU Quotas view of a pools fleet, built from task instances and the core's plan."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from airflow_quota_provider.airflow_pools.decide import decide
from airflow_quota_provider.airflow_pools.figures import fleet_gauges
from airflow_quota_provider.airflow_pools.gateway import AirflowGateway, Credentials
from airflow_quota_provider.airflow_pools.store import Store
from airflow_quota_provider.airflow_pools.task_history import task_durations
from airflow_quota_provider.core.views import AwaitedEnd, ExpectedEnd, PredictedStart
from airflow_quota_provider.view.explain import explain
from airflow_quota_provider.view.pools_source import PoolsBackend, pools_view
from airflow_quota_provider.view.text import Style, event_lines, explanation_lines, status_lines
from tests.pool_manager.test_decide import FLEET, NLP, RESTARTING, RUNNING, VISION, task

NOW = 1_000.0


def test_a_borrower_an_owner_waiting_for_it_and_a_task_admitted_read_as_in_the_batch_view(
    tmp_path: Path,
) -> None:
    tasks = [
        task("v-own", VISION, 8, RUNNING, started=0),
        task("v-borrow", VISION, 6, RUNNING, weight=3, started=500),
        task("n", NLP, 8, weight=5, run_date=900),
        task("v-next", VISION, 1, weight=1, run_date=950),
    ]
    plan = decide(FLEET, tasks, NOW)
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    (stop,) = plan.stop
    store.record_preemption(stop, datetime.fromtimestamp(NOW, UTC))
    view = pools_view(FLEET, tasks, plan, NOW, {}, store.events())

    assert [(j.job_id, j.status, j.position, j.reason_code) for j in view.waiting] == [
        ("train/run-1/n", "RUNNABLE", 1, "PREEMPTION_IN_PROGRESS"),
        ("train/run-1/v-next", "RUNNABLE", 2, "NO_IDLE_CAPACITY"),
    ]
    borrower = view.job("train/run-1/v-borrow")
    assert borrower is not None and borrower.borrowing and borrower.demand == {"gpu": 6}
    assert borrower.task is not None
    assert borrower.task.path == "dags/train/runs/run-1/tasks/v-borrow"
    vision = next(s for s in view.shares if s.name == "vision")
    assert (vision.units[0].owned, vision.units[0].used, vision.units[0].borrowed) == (8, 14, 6)
    assert vision.borrowing == "borrow limit 100%"
    (event,) = view.events
    assert (event.job_id, event.kind, event.preemptor) == (
        "train/run-1/v-borrow",
        "RECLAIM",
        "train/run-1/n",
    )
    assert event.work_lost == 500 * 6, "500 s since its try started, on 6 gpu, no checkpoint"
    lines = status_lines(view, Style(colour=False))
    assert any(line.startswith("share vision: LEND_AND_BORROW") for line in lines), lines
    assert lines[0].startswith(f"fleet {FLEET.config.job_queue} ("), lines[0]
    found = explain(view.job("train/run-1/n"), view, [])  # type: ignore[arg-type]
    assert found.summary.startswith("train/run-1/n waits for 8 gpu in share nlp: ")


def test_a_task_admitted_this_cycle_is_first_in_line_with_its_open_slots() -> None:
    tasks = [task("a", NLP, 2, RUNNING), task("b", NLP, 4)]
    view = pools_view(FLEET, tasks, decide(FLEET, tasks, NOW), NOW, {}, [])
    (admitted,) = view.waiting
    assert (admitted.job_id, admitted.position, admitted.reason_code) == (
        "train/run-1/b",
        1,
        "ADMITTED",
    )
    assert admitted.reason == (
        "its pool quota-nlp-gpu has 4 open slot(s) for it; Airflow starts it next"
    )


def test_a_cleared_task_still_running_is_shown_being_preempted() -> None:
    tasks = [task("gone", VISION, 4, RESTARTING), task("x", NLP, 1, RUNNING)]
    view = pools_view(FLEET, tasks, decide(FLEET, tasks, NOW), NOW, {}, [])
    stopping = view.job("train/run-1/gone")
    assert stopping is not None
    assert (stopping.status, stopping.reason_code) == ("RUNNING", "PREEMPTION_IN_PROGRESS")
    assert stopping.reason == "cleared; Airflow is stopping its process"


def test_a_task_that_is_not_preemptible_is_shown_as_such_and_never_the_next_victim() -> None:
    tasks = [
        task("v-own", VISION, 8, RUNNING, started=0),
        replace(task("v-fixed", VISION, 4, RUNNING, started=10), preemptible=False),
        task("v-borrow", VISION, 2, RUNNING, started=20),
    ]
    view = pools_view(FLEET, tasks, decide(FLEET, tasks, NOW), NOW, {}, [])
    fixed = view.job("train/run-1/v-fixed")
    assert fixed is not None and not fixed.preemptible
    # nlp reclaiming its 8 gpu would take the 8 of v-own, passing over v-fixed
    assert [job.job_id for job in view.running if job.next_victim] == ["train/run-1/v-own"]
    lines = status_lines(view, Style(colour=False))
    assert any("v-fixed" in line and "not preemptible" in line for line in lines), lines


def test_the_fleets_gauges_count_holders_borrowing_lending_and_every_scheduled_task() -> None:
    tasks = [
        task("v-own", VISION, 8, RUNNING, started=0),
        task("v-borrow", VISION, 6, RUNNING, started=500),
        task("n", NLP, 8, weight=5),
        task("v-next", VISION, 1),
    ]
    gauges = {
        name: value for name, value, _ in fleet_gauges(FLEET, tasks, decide(FLEET, tasks, NOW))
    }
    assert {k.removeprefix("quota_provider.share.q."): v for k, v in gauges.items()} == {
        "nlp.gpu.used": 0,
        "nlp.gpu.borrowed": 0,
        "nlp.gpu.lent": 6,
        "nlp.gpu.waiting": 8,
        "vision.gpu.used": 14,
        "vision.gpu.borrowed": 6,
        "vision.gpu.lent": 0,
        "vision.gpu.waiting": 1,
        "eval.gpu.used": 0,
        "eval.gpu.borrowed": 0,
        "eval.gpu.lent": 0,
        "eval.gpu.waiting": 0,
    }


def test_a_fleet_has_no_aws_console_its_work_lost_is_in_its_unit_and_no_utilization(
    tmp_path: Path,
) -> None:
    tasks = [
        task("v-own", VISION, 8, RUNNING, started=0),
        task("v-borrow", VISION, 6, RUNNING, started=500),
        task("n", NLP, 8, run_date=900),
    ]
    plan = decide(FLEET, tasks, NOW)
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    store.record_preemption(plan.stop[0], datetime.fromtimestamp(NOW, UTC))
    view = pools_view(FLEET, tasks, plan, NOW, {}, store.events())

    assert [job.console_url for job in view.jobs()] == [None, None, None]
    assert view.utilization == [], "no history is kept of a fleet: the page draws no panel"
    (event,) = view.events
    assert (event.console_url, event.work_lost_unit) == (None, "gpu")
    row = event_lines(view.events, Style())[1]
    assert " 0.83 gpu-h (no checkpoint) " in row and "instance" not in row, row
    waiting = view.job("train/run-1/n")
    assert waiting is not None
    lines = explanation_lines(explain(waiting, view, []), Style())
    assert not any("AWS" in line for line in lines), lines
    assert lines[-1] == "  Airflow task: train / n / run-1"
    gateway = AirflowGateway("http://127.0.0.1:9", Credentials("nobody", "unused"))
    backend = PoolsBackend(FLEET, gateway, store)
    assert [(q.name, q.kind) for q in backend.queues()] == [(FLEET.config.job_queue, "fleet")]


def test_a_task_waiting_for_a_running_one_starts_when_its_history_says_it_ends() -> None:
    # r has run 100 s of the 600 s its five earlier runs took; v (vision) runs 5000 s
    # and started at 0: w (nlp, behind r) starts when r ends, 500 s from now
    tasks = [
        task("r", NLP, 8, RUNNING, started=NOW - 100),
        task("v", VISION, 8, RUNNING, started=0),
        task("w", NLP, 8, run_date=900),
    ]
    history = {("train", "r"): (600.0,) * 5, ("train", "v"): (5000.0,) * 5}
    durations = task_durations(tasks, history, NOW)
    view = pools_view(FLEET, tasks, decide(FLEET, tasks, NOW), NOW, {}, [], durations)

    waiting = view.job("train/run-1/w")
    assert waiting is not None
    ends = int((NOW + 500) * 1000)
    assert waiting.predicted_start == PredictedStart(
        likely=ends,
        earliest=ends,
        latest=ends,
        text="in about 8 min",
        basis="after 1 job ends in the forecast",
        guess=False,
        ends_before=1,
        waits_for=[AwaitedEnd("train/run-1/r", ends)],
    )
    running = view.job("train/run-1/r")
    assert running is not None and running.expected_end == ExpectedEnd(ends, ends, ends, False)
    assert waiting.duration is not None and waiting.duration.guess, "w has no history"
    lines = status_lines(view, Style())
    at = lines.index(next(line for line in lines if line.startswith("  waiting #1 w ")))
    assert lines[at + 1] == "    starts in about 8 min: after 1 job ends in the forecast"
    explained = explanation_lines(explain(waiting, view, []), Style())
    assert any(
        line.startswith("    waits for r (train/run-1/r, running, share nlp) to end, in 8 min")
        for line in explained
    ), explained


def test_without_durations_the_view_has_no_forecast() -> None:
    tasks = [task("r", NLP, 8, RUNNING), task("w", NLP, 8)]
    view = pools_view(FLEET, tasks, decide(FLEET, tasks, NOW), NOW, {}, [])
    assert [j.predicted_start for j in view.waiting] == [None]
    assert view.forecast_basis == ""
