"""Properties of the usage history over random fleets and random sequences of snapshots.

Each snapshot is a possible state of the fleet: every share uses some of what it
owns; some borrowing shares use all they own and borrow, together no more than the
unowned capacity and the lending shares' idle capacity (what the core lends).
"""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_quota_provider.core import QueueConfig
from airflow_quota_provider.core.history import (
    NAMES,
    ZERO,
    Figures,
    History,
    Key,
    Recorder,
    figures_of,
    integrate,
)
from tests.core.strategies import queue_configs

T0 = 1_795_996_800_000
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True, database=None)
Usage = dict[str, dict[str, int]]
Step = tuple[int, Usage, list[tuple[str, dict[str, int]]]]
"""A snapshot: when, what each share uses, and the waiting jobs (share, demand)."""
Story = tuple[QueueConfig, list[Step]]


@st.composite
def usages(draw: st.DrawFn, config: QueueConfig) -> Usage:
    usage: Usage = {share.name: {} for share in config.shares}
    for unit in config.units:
        borrowers = [
            s for s in config.shares if s.sharing.borrows and draw(st.sampled_from([True, False]))
        ]
        for share in config.shares:
            owned = share.owns(unit)
            usage[share.name][unit] = owned if share in borrowers else draw(st.integers(0, owned))
        room = config.unowned(unit) + sum(
            s.owns(unit) - usage[s.name][unit] for s in config.shares if s.sharing.lends
        )
        for share in borrowers:
            extra = draw(st.integers(0, room))
            usage[share.name][unit] += extra
            room -= extra
    return usage


@st.composite
def stories(draw: st.DrawFn) -> Story:
    config = draw(queue_configs())
    names = [share.name for share in config.shares]
    steps: list[Step] = []
    at = T0
    for _ in range(draw(st.integers(1, 8))):
        at += draw(st.sampled_from([1000, 60_000, 1, 3_600_000]))
        waiting = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(names),
                    st.dictionaries(st.sampled_from(config.units), st.integers(1, 4), min_size=1),
                ),
                max_size=3,
            )
        )
        steps.append((at, draw(usages(config)), waiting))
    return config, steps


def recorded(config: QueueConfig, steps: list[Step]) -> tuple[History, list[dict[Key, Figures]]]:
    recorder = Recorder()
    snapshots = []
    for at, usage, waiting in steps:
        snapshots.append(figures_of(config, usage, waiting))
        recorder.observe(at, snapshots[-1])
    return recorder.history(end=steps[-1][0] + 60_000), snapshots


@PROPERTY
@given(stories())
def test_own_use_lent_and_idle_make_up_what_a_share_owns_at_every_instant(story: Story) -> None:
    history, _ = recorded(*story)
    for change in history.changes:
        f = change.figures
        assert f.own_use + f.lent + f.idle == f.owned, change
        assert min(f.own_use, f.lent, f.idle, f.borrowed) >= 0, change
        assert f.borrowed == 0 or f.own_use == f.owned, change


@PROPERTY
@given(stories())
def test_what_shares_borrow_is_lent_by_others_or_unowned(story: Story) -> None:
    config, steps = story
    _, snapshots = recorded(config, steps)
    for figures in snapshots:
        for unit in config.units:
            shares = [figures[(s.name, unit)] for s in config.shares]
            borrowed = sum(f.borrowed for f in shares)
            from_unowned = min(borrowed, config.unowned(unit))
            assert sum(f.lent for f in shares) == borrowed - from_unowned


@PROPERTY
@given(stories())
def test_the_changes_give_back_every_snapshot(story: Story) -> None:
    config, steps = story
    history, snapshots = recorded(config, steps)
    for (at, _, _), snapshot in zip(steps, snapshots, strict=True):
        held: dict[Key, Figures] = {}
        for change in history.changes:
            if change.at <= at:
                held[change.key] = change.figures
        assert {k: f for k, f in held.items() if f != ZERO} == {
            k: f for k, f in snapshot.items() if f != ZERO
        }


@PROPERTY
@given(stories())
def test_shares_use_together_what_the_fleet_uses(story: Story) -> None:
    config, steps = story
    history, _ = recorded(config, steps)
    totals = integrate(history, T0, history.end)

    def used(sums: Mapping[str, float]) -> float:
        return sums["own_use"] + sums["borrowed"]

    for unit in config.units:
        named = {
            key: dict(zip(NAMES, sums, strict=True))
            for key, sums in totals.items()
            if key[1] == unit
        }
        fleet = named.get((None, unit), {"own_use": 0, "borrowed": 0})
        shares = sum(used(sums) for key, sums in named.items() if key[0] is not None)
        assert shares == used(fleet)
