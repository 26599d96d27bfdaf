"""Downsampling a usage history: buckets worked by hand, and integrals kept exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_quota_provider.core.history import (
    Bucket,
    Change,
    Figures,
    History,
    Integrals,
    JobStart,
    Key,
    series,
)
from airflow_quota_provider.core.retention import DAY, Retention, downsample, for_days

T0 = 1_795_996_800_000
"""2026-11-30 00:00:00 UTC, in epoch milliseconds: on every grid."""
S = 1000
TWO_DAYS = T0 + 2 * 86_400 * S


def story(end: int) -> History:
    """share a owns 8 gpu and uses 2 of them, from 450 s on 5."""
    return History(
        end=end,
        changes=(
            Change(T0, "a", "gpu", Figures(owned=8, own_use=2, idle=6)),
            Change(T0 + 450 * S, "a", "gpu", Figures(owned=8, own_use=5, idle=3)),
        ),
        starts=(JobStart(T0 + 450 * S, "a", "j", {"gpu": 3}, 1, T0),),
    )


def test_changes_older_than_kept_become_five_minute_buckets() -> None:
    now = T0 + 900 * S
    got = downsample(story(now), now, Retention(changes=0, fine=DAY, keep=10 * DAY))
    # in gpu-seconds: own use 2x300; 2x150 + 5x150; 5x300
    assert got.buckets == (
        Bucket(T0, T0 + 300 * S, "a", "gpu", Figures(2400 * S, 600 * S, 0, 0, 1800 * S)),
        Bucket(T0 + 300 * S, T0 + 600 * S, "a", "gpu", Figures(2400 * S, 1050 * S, 0, 0, 1350 * S)),
        Bucket(T0 + 600 * S, T0 + 900 * S, "a", "gpu", Figures(2400 * S, 1500 * S, 0, 0, 900 * S)),
    )
    assert got.changes == (Change(now, "a", "gpu", Figures(owned=8, own_use=5, idle=3)),)
    assert got.starts == story(now).starts


def test_older_buckets_become_hours_and_equal_averages_join() -> None:
    retention = Retention(changes=0, fine=DAY, keep=10 * DAY)
    # the first hour: own use 2x450 + 5x3150 s; then 5 for 47 hours, one bucket
    hour = Bucket(T0, T0 + 3600 * S, "a", "gpu", Figures(28800 * S, 16650 * S, 0, 0, 12150 * S))
    rest = 172_800 - 3600
    after = Bucket(
        T0 + 3600 * S, TWO_DAYS, "a", "gpu", Figures(8 * rest * S, 5 * rest * S, 0, 0, 3 * rest * S)
    )
    once = downsample(story(TWO_DAYS), TWO_DAYS, retention)
    assert once.buckets == (hour, after)
    # the same, however often it ran before
    early = downsample(story(TWO_DAYS), T0 + 900 * S, retention)
    assert downsample(early, TWO_DAYS, retention) == once


def test_what_is_older_than_kept_is_dropped() -> None:
    now = T0 + 3 * 86_400 * S
    got = downsample(story(now), now, Retention(changes=0, fine=DAY, keep=2 * DAY))
    assert got.buckets[0].start == T0 + 86_400 * S
    assert got.starts == ()


def test_retention_steps_must_nest() -> None:
    with pytest.raises(ValueError, match="must be positive and divide"):
        Retention(fine_step=420)
    with pytest.raises(ValueError, match="retention must grow"):
        Retention(changes=40 * DAY)


@st.composite
def histories(draw: st.DrawFn) -> History:
    """Up to three keys, each a step function over up to four days, in whole milliseconds."""
    span = draw(st.sampled_from([40, 20, 10, 1])) * 8640 * S + draw(st.integers(1, 86_400 * S))
    changes = []
    for share in draw(st.lists(st.sampled_from(["a", "b", None]), min_size=1, unique=True)):
        times = draw(st.lists(st.integers(0, span - 1), min_size=1, max_size=12, unique=True))
        for at in sorted(times):
            used, owned = draw(st.integers(0, 9)), draw(st.sampled_from([0, 4, 8]))
            own = min(used, owned)
            figures = Figures(owned, own, used - own, 0, owned - own, draw(st.integers(0, 3)), 1)
            changes.append(Change(T0 + at, share, "gpu", figures))
    changes.sort(key=lambda change: change.at)
    return History(end=T0 + span, changes=tuple(changes))


AGES = (0.0, 3600.0, 0.25 * DAY, 1.5 * DAY, 600.0, 3 * DAY, 5 * DAY)


@st.composite
def retentions(draw: st.DrawFn) -> Retention:
    fine_step = draw(st.sampled_from([60.0, 300.0, 900.0]))
    coarse_step = fine_step * draw(st.sampled_from([1, 4, 12]))
    ages = sorted(draw(st.lists(st.sampled_from(AGES), min_size=3, max_size=3)))
    return Retention(ages[0], ages[1], ages[2], fine_step, coarse_step)


def coarse_cells(history: History, retention: Retention, now: int) -> list[dict[Key, Integrals]]:
    """Integrals over each coarse step from what ``now``'s retention keeps to the end."""
    step = round(retention.coarse_step * 1000)
    keep_from = now - round(retention.keep * 1000)
    keep_from -= keep_from % step
    cells = series(history, keep_from, history.end, step)
    assert all(isinstance(v, int) for cell in cells for sums in cell.values() for v in sums)
    return [{key: sums for key, sums in cell.items() if any(sums)} for cell in cells]


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(histories(), retentions(), st.integers(0, 86_400 * S), st.integers(0, 2 * 86_400 * S))
def test_downsampling_preserves_integrals_exactly(
    history: History, retention: Retention, first: int, later: int
) -> None:
    # mostly at or after the history's end (as it runs), sometimes before
    now = history.end - 3600 * S + first
    once = downsample(history, now, retention)
    assert coarse_cells(once, retention, now) == coarse_cells(history, retention, now)
    twice = downsample(once, now + later, retention)
    assert coarse_cells(twice, retention, now + later) == coarse_cells(
        history, retention, now + later
    )


@pytest.mark.parametrize(
    ("days", "want"),
    [
        pytest.param(400, Retention(), id="400 days: the default"),
        pytest.param(30, Retention(keep=30 * DAY), id="30 days: changes 7, 5-minute until 14"),
        pytest.param(
            3, Retention(changes=3 * DAY, fine=3 * DAY, keep=3 * DAY), id="3 days: all changes"
        ),
    ],
)
def test_history_days_keep_the_finer_resolutions_as_long_as_they_fit(
    days: float, want: Retention
) -> None:
    assert for_days(days) == want


@pytest.mark.parametrize("days", [0, -1, float("nan")])
def test_history_days_must_be_positive(days: float) -> None:
    with pytest.raises(ValueError, match="history_days must be a positive number of days"):
        for_days(days)
