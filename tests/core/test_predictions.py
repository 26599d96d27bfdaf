"""The forecast as the read model says it: records in epoch ms, and the words people read."""

from __future__ import annotations

import pytest

from airflow_quota_provider.core.durations import DurationEstimate
from airflow_quota_provider.core.forecast import NoStart, StartForecast
from airflow_quota_provider.core.predictions import (
    end_text,
    expected_end,
    predict,
    start_basis,
    start_text,
)
from airflow_quota_provider.core.views import (
    AwaitedEnd,
    DurationView,
    ExpectedEnd,
    PredictedStart,
)
from tests.core.builders import queue, running, share, state, waiting

NOW = 1000.0

TEXTS = {
    "a start with a range": (
        StartForecast("w", "nlp", NOW + 1500, NOW + 600, NOW + 2400),
        "in about 25 min, between 10 min and 40 min",
    ),
    "every play agrees: no range": (
        StartForecast("w", "nlp", NOW + 1500, NOW + 1500, NOW + 1500),
        "in about 25 min",
    ),
    "starts now": (StartForecast("w", "nlp", NOW, NOW, NOW), "now"),
    "now, or later in some plays": (
        StartForecast("w", "nlp", NOW, NOW, NOW + 300),
        "now, at the latest in 5 min",
    ),
    "a play that never starts it": (
        StartForecast("w", "nlp", NOW + 60, NOW + 60, None),
        "in about 60 s, 60 s at the earliest (some plays never start it)",
    ),
    "a start behind a guessed duration": (
        StartForecast("w", "nlp", NOW + 7200, NOW + 600, NOW + 21600, 1, 1),
        "in about 2.0 h, between 10 min and 6.0 h (a guess)",
    ),
    "no start": (
        StartForecast("w", "nlp", None, None, None, no_start=NoStart("SHARE_DISABLED", "off")),
        "not expected to start as things are (SHARE_DISABLED)",
    ),
}


@pytest.mark.parametrize(("start", "want"), TEXTS.values(), ids=TEXTS.keys())
def test_start_text(start: StartForecast, want: str) -> None:
    assert start_text(start, NOW) == want


BASES = {
    "starts at once": (
        StartForecast("w", "nlp", NOW, NOW, NOW),
        "without waiting for a job to end",
    ),
    "after ends, some guessed, borrowing": (
        StartForecast("w", "nlp", NOW, NOW, NOW, 3, 1, borrowing=True),
        "after 3 jobs end in the forecast, 1 of them on a guessed duration (no earlier runs); "
        "borrowing",
    ),
    "a preemption makes room": (
        StartForecast("w", "nlp", NOW, NOW, NOW, victims=("a", "b")),
        "without waiting for a job to end; preempts a, b",
    ),
    "no start: the core's message": (
        StartForecast("w", "nlp", None, None, None, no_start=NoStart("X", "why")),
        "why",
    ),
}


@pytest.mark.parametrize(("start", "want"), BASES.values(), ids=BASES.keys())
def test_start_basis(start: StartForecast, want: str) -> None:
    assert start_basis(start) == want


def median_play(play: int, job_id: str) -> float:
    """Each sampled play draws the 10th, 50th and 90th percentile in turn."""
    return (0.1, 0.5, 0.9)[play]


def test_a_running_job_ends_as_the_forecasts_plays_end_it() -> None:
    # 600 s likely, 300 to 1200; it has done 100 s: the sampled plays end it 200, 500 and
    # 1100 s from now (the median 500); the 25th and 75th percentile plays fall inside
    estimate = DurationEstimate(600, 300, 1200, "median of 5 earlier runs")
    got = expected_end(estimate, 100, NOW, "r", draw=median_play)
    assert got == ExpectedEnd(1_500_000, 1_200_000, 2_100_000, False)
    # past its likely 600: expected to end soon (700 x 1.1 = 770), its high 1200 stays:
    # 0 to 500 s from now
    got = expected_end(estimate, 700, NOW, "r", draw=median_play)
    assert got == ExpectedEnd(1_070_000, 1_000_000, 1_500_000, False)
    assert end_text(ExpectedEnd(1_500_000, 0, 0, True), 1_000_000) == (
        "expected to end in about 8 min (a guess)"
    )
    assert end_text(ExpectedEnd(1_000_000, 0, 0, False), 1_000_000) == "expected to end now"


def test_predict_says_every_job_once() -> None:
    # r has run 100 of its 600 s: w starts at 500 s from now, when r ends
    books = state(
        queue(share("nlp").capacity(gpu=8).reserve(), gpu=8),
        [running("r", "nlp", started=NOW - 100, gpu=8)],
        [waiting("w", "nlp", gpu=8)],
    )
    known = DurationEstimate(600, 600, 600, "median of 9 earlier runs")
    got = predict(books, NOW, {"r": known})
    assert got.starts == {
        "w": PredictedStart(
            likely=1_500_000,
            earliest=1_500_000,
            latest=1_500_000,
            text="in about 8 min",
            basis="after 1 job ends in the forecast",
            guess=False,
            ends_before=1,
            waits_for=[AwaitedEnd("r", 1_500_000)],
        )
    }
    assert got.ends == {"r": ExpectedEnd(1_500_000, 1_500_000, 1_500_000, False)}
    assert got.durations["r"] == DurationView(600, 600, 600, "median of 9 earlier runs", False)
    assert got.durations["w"].guess
    assert got.basis.startswith("likely: the median start over 3 plays")
