"""Who lends to whom, derived from what each share uses."""

from __future__ import annotations

from airflow_quota_provider.core.occupancy import Occupancy, occupancy
from tests.core.builders import queue, share


def test_borrowing_comes_from_unowned_capacity_first_then_lenders_by_idle() -> None:
    config = queue(
        share("nlp").capacity(gpu=4),
        share("cv").capacity(gpu=6).lend(),
        share("asr").capacity(gpu=2).lend(),
        share("prod").capacity(gpu=2).reserve(),
        gpu=16,
    )
    # nlp borrows 7: 2 from the unowned capacity, then 5 of the 8 idle in cv (6) and asr (2)
    got = occupancy(config, {"nlp": {"gpu": 11}})
    assert got == {
        "nlp": {"gpu": Occupancy(owned=4, used=11, own_use=4, borrowed=7, lent=0, idle=0)},
        "cv": {"gpu": Occupancy(owned=6, used=0, own_use=0, borrowed=0, lent=4, idle=2)},
        "asr": {"gpu": Occupancy(owned=2, used=0, own_use=0, borrowed=0, lent=1, idle=1)},
        "prod": {"gpu": Occupancy(owned=2, used=0, own_use=0, borrowed=0, lent=0, idle=2)},
    }


def test_nothing_is_lent_while_no_share_borrows() -> None:
    config = queue(share("nlp").capacity(gpu=4), share("cv").capacity(gpu=4), gpu=8)
    got = occupancy(config, {"nlp": {"gpu": 3}})
    assert got["nlp"]["gpu"] == Occupancy(4, 3, 3, 0, 0, 1)
    assert got["cv"]["gpu"] == Occupancy(4, 0, 0, 0, 0, 4)


def test_figures_add_up_for_every_share() -> None:
    config = queue(
        share("a").capacity(gpu=3), share("b").capacity(gpu=3), share("c").capacity(gpu=3), gpu=9
    )
    got = occupancy(config, {"a": {"gpu": 5}, "b": {"gpu": 1}})
    lent = sum(got[s]["gpu"].lent for s in "abc")
    assert lent == 2
    for name in "abc":
        o = got[name]["gpu"]
        assert o.own_use + o.lent + o.idle == o.owned
        assert o.own_use + o.borrowed == o.used
