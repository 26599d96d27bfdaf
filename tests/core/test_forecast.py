"""The start forecast on small states whose starts are worked out by hand (in the comments).

Durations are given per job; ``exact(s)`` has no spread, so every play agrees. Cases
with a spread draw every job at the 10th, 50th and 90th percentile in the three sampled
plays (``by_play``), so each play's durations are known (the 25th and 75th percentile
plays fall inside). Cases play forward exactly (both resolutions 0) unless they say
otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from airflow_quota_provider.core import QueueConfig, RunningJob, WaitingJob
from airflow_quota_provider.core.durations import DurationEstimate
from airflow_quota_provider.core.forecast import (
    Draw,
    NoStart,
    StartForecast,
    forecast,
    seeded,
)
from tests.core.builders import queue, running, share, state, waiting


def exact(seconds: float) -> DurationEstimate:
    return DurationEstimate(seconds, seconds, seconds, "known")


def at(
    job_id: str,
    share_name: str,
    start: float,
    *,
    ends_before: int = 0,
    borrowing: bool = False,
    victims: tuple[str, ...] = (),
    waits_for: tuple[tuple[str, float], ...] = (),
) -> StartForecast:
    """A start all three plays agree on; ``waits_for``: the ends that made room for it."""
    return StartForecast(
        job_id,
        share_name,
        start,
        start,
        start,
        ends_before=ends_before,
        borrowing=borrowing,
        victims=victims,
        waits_for=waits_for,
    )


def by_play(*quantiles: float) -> Draw:
    """Every job at ``quantiles[play]`` in each sampled play."""

    def draw(play: int, job_id: str) -> float:
        return quantiles[play]

    return draw


SPREAD = by_play(0.1, 0.5, 0.9)


def borrower(job: RunningJob) -> RunningJob:
    return replace(job, borrowing=True)


@dataclass
class Case:
    config: QueueConfig
    running: list[RunningJob]
    waiting: list[WaitingJob]
    durations: dict[str, DurationEstimate]
    want: dict[str, StartForecast]
    """Every job waiting at ``now``."""
    now: float = 0.0
    preemption_delay: float = 0.0
    resolution: float = 0.0
    relative_resolution: float = 0.0
    work_kept: dict[str, float] = field(default_factory=dict)
    draw: Draw = SPREAD


nlp_alone = queue(share("nlp").capacity(gpu=8).reserve(), gpu=8)
two_borrowers = queue(
    share("a").capacity(gpu=8).lend_and_borrow(), share("b").capacity(gpu=8), gpu=16
)
lender_and_borrower = queue(
    share("lender").capacity(gpu=8).lend(), share("b").capacity(gpu=8).lend_and_borrow(), gpu=16
)
in_share = queue(share("a").capacity(gpu=8).reserve().in_share_preemption(), gpu=8)
protected = queue(share("a").capacity(gpu=8), share("b").capacity(gpu=8).min_runtime(600), gpu=16)

CASES = {
    # r started at 0 and runs 100 s: at 40 it has 60 s left
    "a job starts when the running job ahead of it ends": Case(
        nlp_alone,
        [running("r", "nlp", started=0, gpu=8)],
        [waiting("w", "nlp", submitted=30, gpu=8)],
        {"r": exact(100), "w": exact(50)},
        {"w": at("w", "nlp", 100, ends_before=1, waits_for=(("r", 100),))},
        now=40,
    ),
    # w starts at 100 and runs 50 s; w2, behind it, starts at 150
    "the job behind it starts when it ends": Case(
        nlp_alone,
        [running("r", "nlp", started=0, gpu=8)],
        [waiting("w", "nlp", submitted=30, gpu=8), waiting("w2", "nlp", submitted=35, gpu=4)],
        {"r": exact(100), "w": exact(50), "w2": exact(10)},
        {
            "w": at("w", "nlp", 100, ends_before=1, waits_for=(("r", 100),)),
            "w2": at("w2", "nlp", 150, ends_before=2, waits_for=(("w", 150),)),
        },
        now=40,
    ),
    # the sampled plays: r ends at 100, 200 or 400; the median is 200
    "the range: r's low, likely and high durations": Case(
        nlp_alone,
        [running("r", "nlp", gpu=8)],
        [waiting("w", "nlp", gpu=8)],
        {"r": DurationEstimate(200, 100, 400, "median of 9 earlier runs")},
        {"w": StartForecast("w", "nlp", 200, 100, 400, ends_before=1, waits_for=(("r", 200),))},
    ),
    # r has run 300 s, longer than its 100 s likely and 150 s high: it is expected to end
    # at 300 x 1.1 = 330 (between 300, now, and 300 x 2 = 600), not in the past
    "a running job past its estimate is expected to end soon": Case(
        nlp_alone,
        [running("r", "nlp", gpu=8)],
        [waiting("w", "nlp", gpu=8)],
        {"r": DurationEstimate(100, 50, 150, "median of 9 earlier runs")},
        {"w": StartForecast("w", "nlp", 330, 300, 600, ends_before=1, waits_for=(("r", 330),))},
        now=300,
    ),
    # b borrows 4 of a's 8; a's job fits in what a owns: rb is reclaimed at 100 and has
    # stopped 30 s later
    "a reclaim: the owner's job starts once the borrower has stopped": Case(
        two_borrowers,
        [borrower(running("rb", "b", started=0, gpu=12))],
        [waiting("wa", "a", submitted=100, gpu=8)],
        {"rb": exact(1000), "wa": exact(50)},
        {"wa": at("wa", "a", 130, victims=("rb",))},
        now=100,
        preemption_delay=30,
    ),
    # rb's preemption was decided before now: it stops preemption_delay after now
    "a victim already stopping frees its room after the preemption delay": Case(
        two_borrowers,
        [borrower(running("rb", "b", started=0, terminating=True, gpu=12))],
        [waiting("wa", "a", submitted=90, gpu=8)],
        {"rb": exact(1000)},
        {"wa": at("wa", "a", 130)},
        now=100,
        preemption_delay=30,
    ),
    # rb is protected by b's min_runtime_seconds until 0 + 600: reclaimed then
    "a reclaim held back by min_runtime_seconds happens when the protection ends": Case(
        protected,
        [borrower(running("rb", "b", started=0, gpu=12))],
        [waiting("wa", "a", submitted=100, gpu=8)],
        {"rb": exact(5000)},
        {"wa": at("wa", "a", 600, victims=("rb",))},
        now=100,
    ),
    # hi preempts r1 at 0 and runs until 50; r1 kept 50 s of its 60 s of work (checkpoints
    # every 25 s), goes back to its place (before w2, submitted earlier) and needs 100 - 50
    # more: it runs 50..100, then w2 starts
    "in-share preemption: the victim resumes from its checkpoint before the jobs behind it": Case(
        in_share,
        [replace(running("r1", "a", priority=1, started=-60, gpu=8), checkpoint_interval=25.0)],
        [
            waiting("hi", "a", priority=9, submitted=0, gpu=8),
            waiting("w2", "a", priority=1, submitted=10, gpu=4),
        ],
        {"r1": exact(100), "hi": exact(50), "w2": exact(10)},
        {
            "hi": at("hi", "a", 0, victims=("r1",)),
            "w2": at("w2", "a", 100, ends_before=2, waits_for=(("r1", 100),)),
        },
    ),
    # r1 has no preemption retry left: hi's preemption fails it for good, so w2 starts
    # when hi ends at 50, not after r1 has run again
    "a victim out of preemption retries does not come back": Case(
        in_share,
        [replace(running("r1", "a", priority=1, gpu=8), preemption_retries=0)],
        [
            waiting("hi", "a", priority=9, submitted=0, gpu=8),
            waiting("w2", "a", priority=1, submitted=10, gpu=8),
        ],
        {"r1": exact(100), "hi": exact(50), "w2": exact(10)},
        {
            "hi": at("hi", "a", 0, victims=("r1",)),
            "w2": at("w2", "a", 50, ends_before=1, waits_for=(("hi", 50),)),
        },
    ),
    # the lender's job ends at 300 and b borrows its idle capacity; b's own job runs to 500
    "a borrower waits for a lender's job to end, not for its own": Case(
        lender_and_borrower,
        [running("l1", "lender", gpu=8), running("b1", "b", gpu=8)],
        [waiting("wb", "b", gpu=4)],
        {"l1": exact(300), "b1": exact(500)},
        {"wb": at("wb", "b", 300, ends_before=1, borrowing=True, waits_for=(("l1", 300),))},
    ),
    # p resumes from 60 s of its 100 s of work: it ends at 40
    "a preempted job waiting again resumes from the work it kept": Case(
        nlp_alone,
        [],
        [waiting("p", "nlp", submitted=0, gpu=8), waiting("w", "nlp", submitted=5, gpu=8)],
        {"p": exact(100), "w": exact(10)},
        {"p": at("p", "nlp", 0), "w": at("w", "nlp", 40, ends_before=1, waits_for=(("p", 40),))},
        work_kept={"p": 60},
    ),
    # no estimate for r: the default (likely 3600, low 600, high 21600 s); it has run 600
    "a start behind a job of unknown duration is a guess": Case(
        nlp_alone,
        [running("r", "nlp", gpu=8)],
        [waiting("w", "nlp", gpu=8)],
        {"w": exact(10)},
        {
            "w": StartForecast(
                "w",
                "nlp",
                3600,
                600,
                21600,
                ends_before=1,
                guessed_ends_before=1,
                waits_for=(("r", 3600),),
            )
        },
        now=600,
    ),
    "a job that can never fit gets no start, with the reason": Case(
        queue(share("nlp").capacity(gpu=8).reserve(), gpu=16),
        [],
        [waiting("big", "nlp", gpu=10)],
        {},
        {
            "big": StartForecast(
                "big",
                "nlp",
                None,
                None,
                None,
                no_start=NoStart(
                    "NO_LONGER_FITS",
                    "the job needs 10 gpu; share nlp may hold at most 8 (owns 8, RESERVE does "
                    "not borrow); it cannot start unless that capacity is raised",
                ),
            )
        },
    ),
    "a job of a disabled share gets no start, with the reason": Case(
        queue(share("nlp").capacity(gpu=8).disabled(), share("cv").capacity(gpu=8), gpu=16),
        [running("c", "cv", gpu=8)],
        [waiting("w", "nlp", gpu=2)],
        {"c": exact(100)},
        {
            "w": StartForecast(
                "w",
                "nlp",
                None,
                None,
                None,
                no_start=NoStart(
                    "SHARE_DISABLED", "share nlp is DISABLED; its jobs wait until it is ENABLED"
                ),
            )
        },
    ),
    # r1 ends at 100, r2 at 130 (w1, started at 100, runs until 1100)
    "exact: each start at the end that makes room": Case(
        nlp_alone,
        [running("r1", "nlp", gpu=4), running("r2", "nlp", gpu=4)],
        [waiting("w1", "nlp", submitted=1, gpu=4), waiting("w2", "nlp", submitted=2, gpu=4)],
        {"r1": exact(100), "r2": exact(130), "w1": exact(1000), "w2": exact(10)},
        {
            "w1": at("w1", "nlp", 100, ends_before=1, waits_for=(("r1", 100),)),
            "w2": at("w2", "nlp", 130, ends_before=2, waits_for=(("r2", 130),)),
        },
    ),
    # 130 is within 60 s of 100: both ends are applied together, at 130
    "with a resolution, ends less than it apart are applied together, at the last": Case(
        nlp_alone,
        [running("r1", "nlp", gpu=4), running("r2", "nlp", gpu=4)],
        [waiting("w1", "nlp", submitted=1, gpu=4), waiting("w2", "nlp", submitted=2, gpu=4)],
        {"r1": exact(100), "r2": exact(130), "w1": exact(1000), "w2": exact(10)},
        {
            "w1": at("w1", "nlp", 130, ends_before=2, waits_for=(("r1", 100), ("r2", 130))),
            "w2": at("w2", "nlp", 130, ends_before=2, waits_for=(("r1", 100), ("r2", 130))),
        },
        resolution=60,
    ),
    # 2 % of the 1000 s from now to r1's end is 20 s: r2's end at 1015 is applied with it
    "with a relative resolution, the window grows with the time from now": Case(
        nlp_alone,
        [running("r1", "nlp", gpu=4), running("r2", "nlp", gpu=4)],
        [waiting("w1", "nlp", submitted=1, gpu=4), waiting("w2", "nlp", submitted=2, gpu=4)],
        {"r1": exact(1000), "r2": exact(1015), "w1": exact(5000), "w2": exact(10)},
        {
            "w1": at("w1", "nlp", 1015, ends_before=2, waits_for=(("r1", 1000), ("r2", 1015))),
            "w2": at("w2", "nlp", 1015, ends_before=2, waits_for=(("r1", 1000), ("r2", 1015))),
        },
        relative_resolution=0.02,
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_forecast(case: Case) -> None:
    books = state(case.config, case.running, case.waiting)
    result = forecast(
        books,
        case.now,
        case.durations,
        work_kept=case.work_kept,
        preemption_delay=case.preemption_delay,
        resolution=case.resolution,
        relative_resolution=case.relative_resolution,
        draw=case.draw,
    )
    assert dict(result.starts) == case.want
    assert result.now == case.now


def test_the_callers_state_is_left_as_it_was() -> None:
    jobs = [borrower(running("rb", "b", started=0, gpu=12))]
    books = state(two_borrowers, jobs, [waiting("wa", "a", submitted=100, gpu=8)])
    forecast(books, 100.0, {"rb": exact(1000)})
    assert list(books.running()) == jobs
    assert [job.id for job in books.waiting()] == ["wa"]


def test_the_likely_start_is_the_median_over_plays_with_drawn_durations() -> None:
    # three 1-gpu jobs hold the queue, each likely to run 1000 s (100 to 10000 s); w needs
    # one of them to end. Each play draws one short (100 s), one median and one long job:
    # w starts at 100 in every sampled play, not at the median duration 1000. In the plays
    # with every job at its 25th or 75th percentile, 1000 x 10 ** -/+(0.6745 / 1.2816), it
    # starts at 297.6 and 3359.8: the range is 100 (the earliest) to 3359.8.
    quantiles = {
        (0, "r1"): 0.1, (0, "r2"): 0.5, (0, "r3"): 0.9,
        (1, "r1"): 0.5, (1, "r2"): 0.9, (1, "r3"): 0.1,
        (2, "r1"): 0.9, (2, "r2"): 0.1, (2, "r3"): 0.5,
    }  # fmt: skip

    def draw(play: int, job_id: str) -> float:
        return quantiles.get((play, job_id), 0.5)

    spread = DurationEstimate(1000, 100, 10000, "median of 9 earlier runs")
    jobs = [running(f"r{i}", "nlp", gpu=1) for i in (1, 2, 3)]
    books = state(queue(share("nlp").capacity(gpu=3), gpu=3), jobs, [waiting("w", "nlp", gpu=1)])
    got = forecast(books, 0.0, dict.fromkeys(("r1", "r2", "r3"), spread), draw=draw).starts["w"]
    assert got.latest is not None
    assert replace(got, latest=round(got.latest, 1)) == StartForecast(
        "w", "nlp", 100, 100, 3359.8, ends_before=1, waits_for=(("r3", 100),)
    )


def test_a_start_behind_a_guessed_duration_says_so() -> None:
    books = state(nlp_alone, [running("r", "nlp", gpu=8)], [waiting("w", "nlp", gpu=8)])
    assert forecast(books, 0.0, {}).starts["w"].guess
    assert not forecast(books, 0.0, {"r": exact(100)}).starts["w"].guess


def test_seeded_draws_are_the_same_for_a_job_in_every_forecast() -> None:
    draw = seeded(7)
    draws = [draw(play, job) for play in range(3) for job in ("a", "b")]
    assert all(0 < q < 1 for q in draws)
    assert len(set(draws)) == len(draws)
    assert draws == [seeded(7)(play, job) for play in range(3) for job in ("a", "b")]
    assert seeded(8)(0, "a") != draw(0, "a")


def test_a_forecast_with_the_default_draws_is_the_same_twice() -> None:
    spread = DurationEstimate(1000, 100, 10000, "median of 9 earlier runs")
    jobs = [running(f"r{i}", "nlp", gpu=1) for i in range(5)]
    books = state(queue(share("nlp").capacity(gpu=5), gpu=5), jobs, [waiting("w", "nlp", gpu=2)])
    estimates = {job.id: spread for job in jobs}
    assert forecast(books, 0.0, estimates) == forecast(books, 0.0, estimates)


def test_at_least_one_sampled_play() -> None:
    books = state(nlp_alone, [], [waiting("w", "nlp", gpu=8)])
    with pytest.raises(ValueError, match="at least 1 sampled play, got 0"):
        forecast(books, 0.0, {}, samples=0)


def test_the_range_says_how_it_is_made() -> None:
    books = state(nlp_alone, [], [waiting("w", "nlp", gpu=8)])
    assert forecast(books, 0.0, {}, samples=5).range_basis == (
        "likely: the median start over 5 plays forward with every job's duration drawn "
        "from its estimate; range: the earliest and latest start over those and two plays "
        "with every job at its 25th and 75th percentile duration"
    )
