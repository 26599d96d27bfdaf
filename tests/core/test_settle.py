"""The settle loop: the books it keeps and what it tells the caller, cycle by cycle."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from airflow_quota_provider.core import (
    Admission,
    Failure,
    Preemption,
    PreemptionKind,
    QueueState,
    RunningJob,
    WaitCode,
    WaitingJob,
)
from airflow_quota_provider.core.settle import MAX_CYCLES, NotSettled, settle, stopped
from tests.core.builders import queue, running, share, state, waiting


@dataclass
class Recorder:
    """An applier that records what it is told; victims stop at once when ``stop_now``."""

    state: QueueState
    stop_now: bool = False
    refuse: set[str] = field(default_factory=set)
    told: list[str] = field(default_factory=list)

    def admit(self, job: WaitingJob, admission: Admission, now: float) -> RunningJob | None:
        self.told.append(f"admit {job.id} borrowing {dict(admission.borrowed)}")
        if job.id in self.refuse:
            return None
        return job.started(now, 0.0, borrowing=any(admission.borrowed.values()))

    def preempt(self, job: RunningJob, preemption: Preemption, now: float) -> None:
        assert job.terminating and self.state.running_job(job.id) == job
        self.told.append(f"preempt {job.id} for {preemption.preemptor} ({preemption.kind.value})")
        if self.stop_now:
            stopped(self.state, job.id, now, fails=preemption.fails)

    def fail(self, job: WaitingJob, failure: Failure, now: float) -> None:
        self.told.append(f"fail {job.id}: {failure.code.value}")


NLP_AND_VISION = queue(
    share("nlp").capacity(gpu=8).lend_and_borrow(),
    share("vision").capacity(gpu=8).lend_and_borrow(),
)


def test_jobs_that_fit_start_in_one_cycle_and_with_none_left_waiting_no_second_runs() -> None:
    books = state(NLP_AND_VISION, [], [waiting("a", "nlp", gpu=4), waiting("b", "vision", gpu=4)])
    recorder = Recorder(books)
    settled = settle(books, 0.0, recorder)
    assert recorder.told == ["admit a borrowing {'gpu': 0}", "admit b borrowing {'gpu': 0}"]
    assert settled.cycles == 1
    assert not settled.decisions.waiting
    assert sorted(job.id for job in books.running()) == ["a", "b"]
    assert books.waiting_count == 0


def test_with_nothing_waiting_no_cycle_runs() -> None:
    books = state(NLP_AND_VISION, [running("a", "nlp", gpu=4)], [])
    settled = settle(books, 0.0, Recorder(books))
    assert settled.cycles == 0


def test_a_victim_stopping_later_keeps_its_room_until_the_caller_reports_it_stopped() -> None:
    borrower = replace(running("v", "vision", started=0, gpu=12), checkpoint_interval=100.0)
    books = state(NLP_AND_VISION, [borrower], [waiting("u", "nlp", submitted=50, gpu=8)])
    recorder = Recorder(books)

    settled = settle(books, 250.0, recorder)
    assert recorder.told == ["preempt v for u (RECLAIM)"]
    assert books.running_job("v") == replace(borrower, terminating=True)
    assert settled.decisions.waiting["u"].code is WaitCode.PREEMPTION_IN_PROGRESS
    assert settled.decisions.waiting["u"].message == "nlp waits for preempted jobs to stop: v"

    result = stopped(books, "v", 280.0, fails=False)
    assert result.work_kept == 200.0, "280 s of work, checkpoints every 100 s"
    assert result.requeued == replace(borrower.requeued(), checkpoint_interval=100.0)
    assert books.waiting_job("v") == result.requeued and books.running_job("v") is None

    recorder.told.clear()
    settle(books, 280.0, recorder)
    assert recorder.told == ["admit u borrowing {'gpu': 0}"], "v's 12 gpu no longer fit beside u"


def test_a_victim_stopped_at_once_lets_its_preemptor_start_in_the_same_settle() -> None:
    books = state(NLP_AND_VISION, [running("v", "vision", gpu=12)], [waiting("u", "nlp", gpu=8)])
    recorder = Recorder(books, stop_now=True)
    settled = settle(books, 10.0, recorder)
    assert recorder.told == ["preempt v for u (RECLAIM)", "admit u borrowing {'gpu': 0}"]
    assert settled.cycles == 3
    assert settled.decisions.waiting["v"].code is WaitCode.NO_IDLE_CAPACITY


def test_a_victim_whose_retries_are_used_up_is_not_requeued() -> None:
    victim = replace(running("v", "vision", gpu=12), preemption_retries=0)
    books = state(NLP_AND_VISION, [victim], [waiting("u", "nlp", gpu=8)])
    recorder = Recorder(books)
    settle(books, 10.0, recorder)
    result = stopped(books, "v", 20.0, fails=True)
    assert result.requeued is None and result.work_kept == 0.0
    assert books.waiting_job("v") is None and books.running_job("v") is None


def test_a_failed_job_leaves_its_queue_and_the_next_one_is_considered() -> None:
    config = queue(share("nlp").capacity(gpu=8).reserve(), gpu=8)
    smaller = queue(share("nlp").capacity(gpu=4).reserve(), gpu=8)
    books = state(config, [], [waiting("big", "nlp", 9, gpu=8), waiting("small", "nlp", gpu=2)])
    books.config = smaller
    recorder = Recorder(books)
    settle(books, 0.0, recorder)
    assert recorder.told == ["fail big: NO_LONGER_FITS", "admit small borrowing {'gpu': 0}"]
    assert books.waiting_count == 0


def test_an_admission_the_caller_could_not_start_holds_nothing() -> None:
    books = state(NLP_AND_VISION, [], [waiting("bad", "nlp", gpu=4)])
    recorder = Recorder(books, refuse={"bad"})
    settled = settle(books, 0.0, recorder)
    assert recorder.told == ["admit bad borrowing {'gpu': 0}"]
    assert books.running_job("bad") is None and books.waiting_count == 0
    assert settled.cycles == 1


def test_on_cycle_sees_each_cycle_once_it_is_applied() -> None:
    books = state(NLP_AND_VISION, [running("v", "vision", gpu=12)], [waiting("u", "nlp", gpu=8)])
    seen: list[tuple[list[str], list[str], list[str]]] = []

    def on_cycle(decisions: object) -> None:
        seen.append(
            (
                sorted(j.id for j in books.running()),
                sorted(j.id for j in books.terminating()),
                sorted(j.id for j in books.waiting()),
            )
        )

    settle(books, 10.0, Recorder(books, stop_now=True), on_cycle=on_cycle)
    assert seen == [([], [], ["u", "v"]), (["u"], [], ["v"]), (["u"], [], ["v"])]


class Requeuer(Recorder):
    """A caller that puts every admitted job straight back: the decisions never end."""

    def admit(self, job: WaitingJob, admission: Admission, now: float) -> RunningJob | None:
        self.state.add_waiting(job)
        return None


def test_an_instant_that_never_settles_is_an_error_not_a_hang() -> None:
    books = state(NLP_AND_VISION, [], [waiting("a", "nlp", gpu=4)])
    with pytest.raises(NotSettled, match=f"did not settle at t=5 after {MAX_CYCLES} cycles"):
        settle(books, 5.0, Requeuer(books))


def test_preemption_kinds_are_passed_through() -> None:
    config = queue(share("nlp").capacity(gpu=8).lend_and_borrow().in_share_preemption(), gpu=8)
    books = state(config, [running("low", "nlp", 1, gpu=8)], [waiting("high", "nlp", 9, gpu=8)])
    recorder = Recorder(books)
    settle(books, 0.0, recorder)
    assert recorder.told == [f"preempt low for high ({PreemptionKind.IN_SHARE.value})"]
