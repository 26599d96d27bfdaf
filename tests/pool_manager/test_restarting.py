"""How long a task has shown ``restarting``, and when it counts as stuck."""

from __future__ import annotations

from airflow_quota_provider.airflow_pools.restarting import RestartingWatch
from tests.pool_manager.test_decide import NLP, RESTARTING, RUNNING, VISION, task


def test_a_task_restarting_for_the_whole_time_is_stuck_and_given_as_long_again_once_cleared() -> (
    None
):
    watch = RestartingWatch(stuck_after=30)
    victim = task("victim", VISION, 2, RESTARTING)
    other = task("other", NLP, 1, RUNNING)
    assert watch.stuck([victim, other], now=100) == []
    assert watch.stuck([victim, other], now=129) == []
    assert watch.stuck([victim, other], now=130) == [victim]
    watch.cleared(victim.key, now=131)
    assert watch.stuck([victim], now=160) == []
    assert watch.stuck([victim], now=161) == [victim]


def test_a_task_seen_in_another_state_starts_over() -> None:
    watch = RestartingWatch(stuck_after=30)
    restarting = task("t", VISION, 2, RESTARTING)
    assert watch.stuck([restarting], now=0) == []
    assert watch.stuck([task("t", VISION, 2, RUNNING)], now=20) == []  # it ran again
    assert watch.stuck([restarting], now=40) == []
    assert watch.stuck([restarting], now=69) == []
    assert watch.stuck([restarting], now=70) == [restarting]
    assert watch.stuck([], now=80) == []  # gone: forgotten
    assert watch.stuck([restarting], now=90) == []
