"""The one sum of what holders hold, and which holders borrow, for every backend."""

from __future__ import annotations

import pytest

from airflow_quota_provider.core.usage import borrowers, held, unit_totals
from tests.core.builders import queue, share

FLEET = queue(
    share("nlp").capacity(gpu=4, cpu=2).lend_and_borrow(),
    share("cv").capacity(gpu=4).lend_and_borrow(),
    gpu=8,
    cpu=2,
)


def test_holdings_add_up_per_share_and_unit_and_per_unit() -> None:
    usage = held([("nlp", {"gpu": 2}), ("cv", {"gpu": 1}), ("nlp", {"gpu": 1, "cpu": 2})])
    assert usage == {"nlp": {"gpu": 3, "cpu": 2}, "cv": {"gpu": 1}}
    assert unit_totals(usage) == {"gpu": 4, "cpu": 2}
    assert held([]) == {} and unit_totals({}) == {}


@pytest.mark.parametrize(
    ("in_start_order", "expected"),
    [
        pytest.param([("a", "nlp", {"gpu": 4})], set(), id="exactly what it owns"),
        pytest.param(
            [("a", "nlp", {"gpu": 3}), ("b", "nlp", {"gpu": 2}), ("c", "nlp", {"gpu": 1})],
            {"b", "c"},
            id="the later starts borrow once the share is over what it owns",
        ),
        pytest.param(
            [("a", "nlp", {"gpu": 3}), ("b", "cv", {"gpu": 3}), ("c", "nlp", {"gpu": 1})],
            set(),
            id="each share counts its own holders",
        ),
        pytest.param(
            [("a", "nlp", {"cpu": 2}), ("b", "nlp", {"gpu": 1, "cpu": 1})],
            {"b"},
            id="over in one unit of its demand is borrowing",
        ),
        pytest.param([("a", "gone", {"gpu": 1})], {"a"}, id="an unknown share owns nothing"),
    ],
)
def test_borrowers_are_the_holders_beyond_what_their_share_owns(
    in_start_order: list[tuple[str, str, dict[str, int]]], expected: set[str]
) -> None:
    assert borrowers(FLEET, in_start_order) == expected
