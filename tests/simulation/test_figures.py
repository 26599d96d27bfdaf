"""How figures read in text: durations in the two largest units, values named by unit."""

from __future__ import annotations

import pytest

from airflow_quota_provider.simulation.figures import duration, per_unit


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (2.5, "2.5s"),
        (9.96, "10s"),
        (42.4, "42s"),
        (59.4, "59s"),
        (59.6, "1m 00s"),
        (245, "4m 05s"),
        (3599.6, "1h 00m"),
        (3 * 3600 + 14 * 60 + 20, "3h 14m"),
        (86400 - 20, "1d 00h"),
        (11 * 86400 + 13 * 3600 + 1000, "11d 13h"),
        (1e6, "11d 14h"),
    ],
)
def test_durations_read_in_the_two_largest_units(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_each_value_is_named_by_its_unit() -> None:
    assert per_unit({"cpu": 0.001, "gpu": 0.223}) == "cpu 0.1%, gpu 22.3%"
    assert per_unit({"cpu": None, "gpu": 1.5}, "{:.0%}") == "gpu 150%"
    assert per_unit({"gpu": None}) == "-"
