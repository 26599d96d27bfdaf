"""The duration estimator: one table case per rule, values worked out by hand."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from airflow_quota_provider.core.durations import (
    NO_HISTORY,
    DurationEstimate,
    DurationHistory,
    estimate_duration,
)

PERCENTILES = "(range: 10th to 90th percentile)"
"""A percentile here is the shortest run that share of the runs stays within."""
FEW = "(range: half to twice the median, too few runs for percentiles)"
DEFAULT = "no earlier runs: a default of 3600 s (600 to 21600 s)"


@dataclass
class Case:
    history: list[float]
    want: DurationEstimate
    max_runtime: float | None = None
    elapsed: float = 0.0
    default: DurationEstimate = field(default=NO_HISTORY)


CASES = {
    # 20, 40, 60, 80 and 100 % stay within 100, 200, 300, 400 and 500
    "five runs: the median, and the 10th to 90th percentile as the range": Case(
        [500, 100, 400, 200, 300],
        DurationEstimate(300, 100, 500, f"median of 5 earlier runs {PERCENTILES}"),
    ),
    # half of the runs stay within 300; 5/6 within 500, less than 90 %
    "an even count: the median is the lower middle run": Case(
        [100, 200, 300, 400, 500, 600],
        DurationEstimate(300, 100, 600, f"median of 6 earlier runs {PERCENTILES}"),
    ),
    # median 100; half of it is 50, twice it 200 (< the longest, 300)
    "two runs are too few for percentiles: half to twice the median": Case(
        [300, 100],
        DurationEstimate(100, 50, 300, f"median of 2 earlier runs {FEW}"),
    ),
    # median 300; the shortest (50) is below half of it (150), so the range keeps it
    "a few runs: the range covers the shortest and the longest run": Case(
        [50, 300, 1000],
        DurationEstimate(300, 50, 1000, f"median of 3 earlier runs {FEW}"),
    ),
    "one run": Case([600], DurationEstimate(600, 300, 1200, f"median of 1 earlier run {FEW}")),
    "a bound below the high value caps it": Case(
        [100, 200, 300, 400, 500],
        DurationEstimate(
            300,
            100,
            400,
            f"median of 5 earlier runs {PERCENTILES}; at most 400 s (its max runtime)",
            max_runtime=400,
        ),
        max_runtime=400,
    ),
    "a bound above every value changes none and is kept": Case(
        [100, 200, 300, 400, 500],
        DurationEstimate(300, 100, 500, f"median of 5 earlier runs {PERCENTILES}", False, 7200),
        max_runtime=7200,
    ),
    # 700, 800, 900, 1000 lasted over 650: half of them within 800; range 400 (raised to
    # the 650 it has run) to 1600
    "a running job: only the earlier runs that lasted longer than it has run count": Case(
        [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000],
        DurationEstimate(
            800,
            650,
            1600,
            f"median of the 4 of 10 earlier runs that lasted over 650 s {FEW}",
            elapsed=650,
        ),
        elapsed=650,
    ),
    # past every run: likely 1000 x 1.1, low 1000, high 1000 x 2
    "a job that ran longer than every earlier run ends soon, not in the past": Case(
        [100, 200, 300, 400, 500],
        DurationEstimate(
            1100,
            1000,
            2000,
            f"median of 5 earlier runs, all shorter than it has run {PERCENTILES}; "
            "has run 1000 s, longer than that: expected to end soon",
            elapsed=1000,
        ),
        elapsed=1000,
    ),
    "an overrun job never beyond its bound": Case(
        [100, 200, 300, 400, 500],
        DurationEstimate(
            1100,
            1000,
            1500,
            f"median of 5 earlier runs, all shorter than it has run {PERCENTILES}; "
            "has run 1000 s, longer than that: expected to end soon; "
            "at most 1500 s (its max runtime)",
            max_runtime=1500,
            elapsed=1000,
        ),
        max_runtime=1500,
        elapsed=1000,
    ),
    "a job that has run its whole bound ends now": Case(
        [100, 200, 300, 400, 500],
        DurationEstimate(
            1200,
            1200,
            1200,
            f"median of 5 earlier runs, all shorter than it has run {PERCENTILES}; "
            "has run 1200 s, its max runtime 1000 s: ends now",
            max_runtime=1000,
            elapsed=1200,
        ),
        max_runtime=1000,
        elapsed=1200,
    ),
    "no history: the stated default, a guess": Case(
        [], DurationEstimate(3600, 600, 21600, DEFAULT, guess=True)
    ),
    "no history with a bound: the default capped": Case(
        [],
        DurationEstimate(
            1800, 600, 1800, f"{DEFAULT}; at most 1800 s (its max runtime)", True, 1800
        ),
        max_runtime=1800,
    ),
    # 5000 x 1.1 = 5500; the default's high (21600) is still above it
    "no history, running past the default: a guess that ends soon": Case(
        [],
        DurationEstimate(
            5500,
            5000,
            21600,
            f"{DEFAULT}; has run 5000 s, longer than that: expected to end soon",
            guess=True,
            elapsed=5000,
        ),
        elapsed=5000,
    ),
    "no history with a default of the caller's own": Case(
        [],
        DurationEstimate(60, 30, 120, "the queue's default", guess=True),
        default=DurationEstimate(60, 30, 120, "the queue's default", guess=True),
    ),
}


# Kaplan-Meier, 8 runs: 100 and 200 end (7/8, then 6/8 last longer); 300 ends among the
# 6 still at risk (6/8 x 5/6 = 5/8); the three still running at 350 leave the risk set;
# 400 ends among 2 (5/8 x 1/2 = 5/16), 500 last (0). Lasting at most 300: 3/8 < half;
# at most 400: 11/16, the median. Without the running ones it would be 300.
RUNNING = {
    "runs still running count for what they have run so far (Kaplan-Meier)": (
        DurationHistory([100, 200, 300, 400, 500], running=[350, 350, 350]),
        0.0,
        DurationEstimate(
            400, 100, 500, f"median of 5 earlier runs and 3 still running {PERCENTILES}"
        ),
    ),
    # lasting at most 100: 1/3; more is unknown while two run on past 1000: the median
    # and the 90th percentile are the longest run known, 1000; few runs: 100 to 2 x 1000
    "a percentile the runs still running leave unknown is the longest run known": (
        DurationHistory([100], running=[1000, 1000]),
        0.0,
        DurationEstimate(1000, 100, 2000, f"median of 1 earlier run and 2 still running {FEW}"),
    ),
    # 6/8 of the runs last past 250; 5/8 past 300 (1/6 of those ended), 5/16 past 400 (7/12
    # ended): the median is 400. Three finished runs: from half of it, 200, raised to the
    # 250 it has run, to twice it, 800
    "a running job: the runs still running past it count too": (
        DurationHistory([100, 200, 300, 400, 500], running=[350, 350, 350]),
        250.0,
        DurationEstimate(
            400,
            250,
            800,
            f"median of the 3 of 5 earlier runs that lasted over 250 s and 3 still running {FEW}",
            elapsed=250,
        ),
    ),
    "no run has finished yet: the default, a guess": (
        DurationHistory([], running=[500]),
        0.0,
        DurationEstimate(3600, 600, 21600, DEFAULT, guess=True),
    ),
}


@pytest.mark.parametrize(("history", "elapsed", "want"), RUNNING.values(), ids=RUNNING.keys())
def test_estimate_with_runs_still_running(
    history: DurationHistory, elapsed: float, want: DurationEstimate
) -> None:
    assert estimate_duration(history, elapsed=elapsed) == want


def test_the_share_of_runs_lasting_longer() -> None:
    history = DurationHistory([100, 200, 300, 400, 500], running=[350, 350, 350])
    shares = [history.survival(d) for d in (0, 100, 250, 300, 350, 400, 500)]
    assert shares == pytest.approx([1, 7 / 8, 6 / 8, 5 / 8, 5 / 8, 5 / 16, 0])


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_estimate(case: Case) -> None:
    got = estimate_duration(
        case.history, max_runtime=case.max_runtime, elapsed=case.elapsed, default=case.default
    )
    assert got == case.want


def test_a_kept_history_estimates_as_the_list_does() -> None:
    runs = [900.0, 100.0, 500.0, 300.0, 700.0, 200.0]
    history = DurationHistory(runs)
    assert history.runs == (100, 200, 300, 500, 700, 900)
    for elapsed in (0.0, 250.0, 800.0, 1000.0):
        kept = estimate_duration(history, elapsed=elapsed)
        assert kept == estimate_duration(runs, elapsed=elapsed)


@pytest.mark.parametrize(("low", "likely", "high"), [(200, 100, 300), (100, 300, 200), (-1, 0, 1)])
def test_an_estimate_out_of_order_is_refused(low: float, likely: float, high: float) -> None:
    with pytest.raises(ValueError, match="needs 0 <= elapsed <= low <= likely <= high"):
        DurationEstimate(likely, low, high, "wrong")


def test_an_estimate_that_has_run_beyond_its_low_value_is_refused() -> None:
    with pytest.raises(ValueError, match="got elapsed 300, low 200, likely 400, high 500"):
        DurationEstimate(400, 200, 500, "wrong", elapsed=300)


def test_an_estimate_above_the_elapsed_time_only_remembers_it() -> None:
    estimate = DurationEstimate(300, 200, 400, "median of 7 earlier runs")
    assert estimate.after(150) == replace(estimate, elapsed=150)
    assert estimate.after(0) == estimate
    # past low only: low rises to what it has run, nothing else changes
    assert estimate.after(250) == DurationEstimate(
        300, 250, 400, "median of 7 earlier runs", elapsed=250
    )


# log-normal on each side of the median 100: through 10 at the 10th percentile and 1000 at
# the 90th; the 25th and 75th percentiles are 0.6745 / 1.2816 = 0.5263 of the way in
# logarithms; 10 ** 0.5263 = 3.360: 100 / 3.360 = 29.76 and 100 x 3.360 = 336.0
QUANTILES = {
    "the median is likely": (DurationEstimate(100, 10, 1000, "b"), 0.5, 100.0),
    "the 10th percentile is low": (DurationEstimate(100, 10, 1000, "b"), 0.1, 10.0),
    "the 90th percentile is high": (DurationEstimate(100, 10, 1000, "b"), 0.9, 1000.0),
    "the 25th percentile, between low and likely": (
        DurationEstimate(100, 10, 1000, "b"),
        0.25,
        29.76,
    ),
    "the 75th percentile, between likely and high": (
        DurationEstimate(100, 10, 1000, "b"),
        0.75,
        336.0,
    ),
    "never above the max runtime": (
        DurationEstimate(100, 10, 1000, "b", max_runtime=200),
        0.75,
        200,
    ),
    "never below what it has run": (DurationEstimate(100, 50, 1000, "b", elapsed=50), 0.01, 50),
    "no spread, one value": (DurationEstimate(60, 60, 60, "b"), 0.99, 60),
}


@pytest.mark.parametrize(("estimate", "q", "want"), QUANTILES.values(), ids=QUANTILES.keys())
def test_quantile(estimate: DurationEstimate, q: float, want: float) -> None:
    assert estimate.quantile(q) == pytest.approx(want, rel=1e-3)
