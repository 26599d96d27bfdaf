"""The usage history of a story told by hand: borrowing, a reclaim, an in-share preemption.

The fleet: 8 gpu; nlp and cv own 4 each, both LEND_AND_BORROW without limit. Times
are seconds after T0 (2026-11-30 00:00 UTC); every figure expected below is worked
from the story, interval by interval, not from the code:

====  ===========  ==========================================================
 t     interval     what holds
====  ===========  ==========================================================
0     A  0-60      c1 (cv, 6 gpu, priority 10) waits
60    B  60-600    c1 runs: cv uses its 4 and borrows 2, lent by nlp (idle 2)
600   C  600-660   n1 (nlp, 4 gpu) waits; c1 is being reclaimed (60 s to stop)
660   D  660-1860  c1 stopped (checkpoint every 500 s: lost 100 s x 6 gpu) and
                   waits again; n1 runs within nlp's 4
1860  E  1860-2400 n1 ended; c1 runs again as in B (waited 1200 s)
2400  F  2400-2460 c3 (cv, 4 gpu, priority 50) waits; c1 is preempted in-share
2460  G  2460-3600 c1 stopped (resumed 500, ran 600: kept 1000, lost 100 s x 6
                   gpu) and waits; c3 runs within cv's 4
3600  H  3600-7200 c3 ended; c1 runs again as in B (waited 1140 s)
====  ===========  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from airflow_quota_provider.core import QueueState, RunningJob, WaitingJob
from airflow_quota_provider.core.history import (
    Change,
    Figures,
    History,
    JobStart,
    PreemptionRecord,
    Recorder,
    integrate,
    preemption_record,
    state_figures,
)
from airflow_quota_provider.core.showback import (
    Day,
    ShareUsage,
    daily,
    job_waits,
    usage_report,
    utilization,
)
from airflow_quota_provider.core.views import UtilizationPoint
from tests.core.builders import queue, share

T0 = 1_795_996_800_000
"""2026-11-30 00:00:00 UTC, in epoch milliseconds."""
END = 7200
HOUR = 3600.0


def ms(seconds: int) -> int:
    return T0 + seconds * 1000


class Story:
    """The story above, told to a :class:`Recorder` step by step."""

    def __init__(self) -> None:
        self.config = queue(
            share("nlp").capacity(gpu=4).lend_and_borrow(),
            share("cv").capacity(gpu=4).lend_and_borrow().in_share_preemption(),
            gpu=8,
        )
        self.state = QueueState(self.config)
        self.recorder = Recorder()
        self.queued: dict[str, int] = {}

    def submit(self, job_id: str, share_name: str, gpu: int, priority: int, at: int) -> None:
        self.state.add_waiting(WaitingJob(job_id, share_name, {"gpu": gpu}, priority, at))
        self.queued[job_id] = at

    def start(self, job_id: str, at: int, attempt: int) -> None:
        job = self.state.remove_waiting(job_id)
        self.state.add_running(job.started(at))
        self.recorder.started(
            JobStart(ms(at), job.share, job_id, dict(job.demand), attempt, ms(self.queued[job_id]))
        )

    def end(self, job_id: str) -> None:
        self.state.remove_running(job_id)

    def preempt(self, victim: str, preemptor: str, kind: str, at: int, lost: float) -> None:
        job = self.state.remove_running(victim)
        by = self.state.waiting_job(preemptor)
        self.recorder.preempted(preemption_record(ms(at), job, kind, by, lost))
        self.state.add_waiting(job.requeued())
        self.queued[victim] = at

    def observe(self, at: int) -> None:
        self.recorder.observe(ms(at), state_figures(self.state))


def told() -> History:
    story = Story()
    steps: list[tuple[int, Callable[[], None]]] = [
        (0, lambda: story.submit("c1", "cv", 6, 10, 0)),
        (60, lambda: story.start("c1", 60, 1)),
        (600, lambda: story.submit("n1", "nlp", 4, 0, 600)),
        (660, lambda: story.preempt("c1", "n1", "RECLAIM", 660, 100.0)),
        (660, lambda: story.start("n1", 660, 1)),
        (1860, lambda: story.end("n1")),
        (1860, lambda: story.start("c1", 1860, 2)),
        (2400, lambda: story.submit("c3", "cv", 4, 50, 2400)),
        (2460, lambda: story.preempt("c1", "c3", "IN_SHARE", 2460, 100.0)),
        (2460, lambda: story.start("c3", 2460, 1)),
        (3600, lambda: story.end("c3")),
        (3600, lambda: story.start("c1", 3600, 3)),
    ]
    for index, (at, step) in enumerate(steps):
        step()
        if index + 1 == len(steps) or steps[index + 1][0] != at:
            story.observe(at)
    return story.recorder.history(end=ms(END))


def test_only_changes_are_recorded_and_cv_steps_as_told() -> None:
    history = told()
    cv = [c for c in history.changes if c.share == "cv"]
    # owned, own_use, borrowed, lent, idle, waiting, waiting_jobs; no change at 600 (C):
    # only nlp's and the fleet's waiting demand changed then
    assert cv == [
        Change(ms(0), "cv", "gpu", Figures(4, 0, 0, 0, 4, 6, 1)),
        Change(ms(60), "cv", "gpu", Figures(4, 4, 2, 0, 0, 0, 0)),
        Change(ms(660), "cv", "gpu", Figures(4, 0, 0, 0, 4, 6, 1)),
        Change(ms(1860), "cv", "gpu", Figures(4, 4, 2, 0, 0, 0, 0)),
        Change(ms(2400), "cv", "gpu", Figures(4, 4, 2, 0, 0, 4, 1)),
        Change(ms(2460), "cv", "gpu", Figures(4, 4, 0, 0, 0, 6, 1)),
        Change(ms(3600), "cv", "gpu", Figures(4, 4, 2, 0, 0, 0, 0)),
    ]
    nlp = [(c.at, c.figures) for c in history.changes if c.share == "nlp"]
    assert nlp == [
        (ms(0), Figures(4, 0, 0, 0, 4, 0, 0)),
        (ms(60), Figures(4, 0, 0, 2, 2, 0, 0)),
        (ms(600), Figures(4, 0, 0, 2, 2, 4, 1)),
        (ms(660), Figures(4, 4, 0, 0, 0, 0, 0)),
        (ms(1860), Figures(4, 0, 0, 2, 2, 0, 0)),
        (ms(2460), Figures(4, 0, 0, 0, 4, 0, 0)),
        (ms(3600), Figures(4, 0, 0, 2, 2, 0, 0)),
    ]
    assert len(history.changes) == 7 + 7 + 8  # the fleet changes at every step


def test_integrals_in_gpu_seconds() -> None:
    got = integrate(told(), ms(0), ms(END))
    second = 1000
    # cv own use: B 540x4 + C 60x4 + E 540x4 + F 60x4 + G 1140x4 + H 3600x4
    # cv borrowed: (B 540 + C 60 + E 540 + F 60 + H 3600) x 2; idle: A 60x4 + D 1200x4
    # cv waiting: A 60x6 + D 1200x6 + F 60x4 + G 1140x6, 1 job in each of them
    assert got[("cv", "gpu")] == [
        28800 * second,
        23760 * second,
        9600 * second,
        0,
        5040 * second,
        14640 * second,
        2460 * second,
    ]
    # nlp lends what cv borrows; own use D 1200x4; idle the rest of its 4x7200
    assert got[("nlp", "gpu")] == [
        28800 * second,
        4800 * second,
        0,
        9600 * second,
        14400 * second,
        240 * second,
        60 * second,
    ]


def test_showback_report_of_the_story() -> None:
    rows = usage_report(told(), ms(0), ms(END))
    assert rows == [
        ShareUsage(
            share="cv",
            unit="gpu",
            owned_hours=28800 / HOUR,
            own_use_hours=23760 / HOUR,
            borrowed_hours=9600 / HOUR,
            lent_hours=0.0,
            idle_hours=5040 / HOUR,
            waiting_hours=14640 / HOUR,
            jobs_started=2,
            # c1 waited 60 + 1200 + 1140 = 2400 s in all, c3 60 s
            mean_wait=(2400 + 60) / 2,
            p95_wait=2400.0,
            preemptions_suffered=2,
            preemptions_caused=1,
            # 100 s x 6 gpu lost at each of the two preemptions
            hours_lost=1200 / HOUR,
        ),
        ShareUsage(
            share="nlp",
            unit="gpu",
            owned_hours=28800 / HOUR,
            own_use_hours=4800 / HOUR,
            borrowed_hours=0.0,
            lent_hours=9600 / HOUR,
            idle_hours=14400 / HOUR,
            waiting_hours=240 / HOUR,
            jobs_started=1,
            mean_wait=60.0,
            p95_wait=60.0,
            preemptions_suffered=0,
            preemptions_caused=1,
            hours_lost=0.0,
        ),
    ]


def test_a_requeued_job_waits_again_and_its_waits_add_up() -> None:
    waits = job_waits(told().starts)
    c1 = waits["c1"]
    assert (c1.first_start, c1.starts, c1.first_wait, c1.total_wait) == (ms(60), 3, 60.0, 2400.0)
    # known at 3000 s, c1 had waited 60 + 1200 s and was waiting again
    assert job_waits(told().starts, until=ms(3000))["c1"].total_wait == 1260.0


def test_preemptions_say_who_preempted_whom() -> None:
    assert told().preemptions == (
        PreemptionRecord(ms(660), "RECLAIM", "cv", "c1", {"gpu": 6}, "nlp", "n1", 100.0),
        PreemptionRecord(ms(2460), "IN_SHARE", "cv", "c1", {"gpu": 6}, "cv", "c3", 100.0),
    )


def test_a_window_counts_jobs_first_started_in_it() -> None:
    # [1000, 3000): no job's first start but c3's (2460), its 60 s wait; the in-share
    # preemption at 2460 only; cv own use E 540x4 + F 60x4 + G 540x4
    rows = {row.share: row for row in usage_report(told(), ms(1000), ms(3000))}
    cv = rows["cv"]
    assert (cv.jobs_started, cv.mean_wait, cv.preemptions_suffered) == (1, 60.0, 1)
    assert cv.own_use_hours == (540 + 60 + 540) * 4 / HOUR
    assert (rows["nlp"].jobs_started, rows["nlp"].preemptions_caused) == (0, 0)


def test_daily_waits_and_work_lost() -> None:
    # waits 60 (c3), 60 (n1), 2400 (c1): p50 the 2nd, p95 the 3rd
    assert daily(told(), ms(0), ms(END)) == [Day(ms(0), 3, 60.0, 2400.0, {"gpu": 1200 / HOUR})]
    assert daily(told(), ms(0), ms(END), shares={"nlp"}) == [Day(ms(0), 1, 60.0, 60.0, {})]


def test_fleet_utilization_per_hour() -> None:
    # first hour: B 540x6 + C 60x6 + D 1200x4 + E 540x6 + F 60x6 + G 1140x4 = 16560 gpu-s
    assert utilization(told(), ms(0), ms(END), 3_600_000) == [
        UtilizationPoint(ms(0), 3600, {"gpu": 16560 / 3600}),
        UtilizationPoint(ms(3600), 3600, {"gpu": 6.0}),
    ]


@pytest.mark.parametrize(
    ("usage", "lent"),
    [
        pytest.param({"a": 8}, {"b": 3, "c": 1}, id="lenders lend in proportion to their idle"),
        pytest.param({"a": 7}, {"b": 2, "c": 1}, id="largest remainder rounds a split"),
        pytest.param({"a": 6, "b": 6}, {"c": 2}, id="only idle capacity is lent"),
        pytest.param({"a": 12}, {"b": 6, "c": 2}, id="a reserved share lends nothing"),
    ],
)
def test_lent_is_split_among_lenders(usage: dict[str, int], lent: dict[str, int]) -> None:
    # a borrows; b owns 6 and c 2 (LEND), d 2 (RESERVE): 14 gpu, none unowned
    config = queue(
        share("a").capacity(gpu=4).lend_and_borrow(),
        share("b").capacity(gpu=6).lend(),
        share("c").capacity(gpu=2).lend(),
        share("d").capacity(gpu=2).reserve(),
        gpu=14,
    )
    running = [RunningJob(f"j{s}", s, {"gpu": n}, 0, 0.0) for s, n in usage.items()]
    figures = state_figures(QueueState.from_jobs(config, running))
    got = {s: figures[(s, "gpu")].lent for s in "abcd" if figures[(s, "gpu")].lent}
    assert got == lent


def test_a_removed_share_changes_to_zero_and_a_restarted_recorder_repeats_nothing() -> None:
    config = queue(share("a").capacity(gpu=2), share("b").capacity(gpu=2), gpu=4)
    first = state_figures(QueueState(config))
    recorder = Recorder()
    assert len(recorder.observe(ms(0), first)) == 3
    restarted = Recorder(last=first)
    assert restarted.observe(ms(60), first) == []
    smaller = queue(share("a").capacity(gpu=2), gpu=4)
    assert restarted.observe(ms(120), state_figures(QueueState(smaller))) == [
        Change(ms(120), "b", "gpu", Figures())
    ]
    with pytest.raises(ValueError, match="before the last observation"):
        restarted.observe(ms(90), first)
