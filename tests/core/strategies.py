"""Hypothesis strategies for the core's property tests: random queues and job streams.

Configs are valid ones (they survive ``parse_config(config_to_dict(c))``): 1 to 6
shares over 1 to 3 units, every strategy, borrow limits, in-share preemption,
and shares owning at most the queue's capacity of each unit together. Job
streams draw priorities from a small palette and submit times from a coarse
grid, so ties in priority and in submission time are common.

Hypothesis tries the simplest draw (the first of every ``sampled_from``) often
and shrinks toward it, so the lists below start with the values of a contended
queue: two lend-and-borrow shares owning 4 of each of two units, a borrower that
takes the whole queue first and an owner that comes later and reclaims. Left to
small integers, most runs would never preempt at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from airflow_quota_provider.core import (
    IdleAssignment,
    QueueConfig,
    Share,
    Sharing,
    VictimOrder,
)
from airflow_quota_provider.core.config import config_to_dict, parse_config
from airflow_quota_provider.core.model import MAX_PRIORITY, MIN_PRIORITY
from airflow_quota_provider.simulation.scenario import JobSpec

UNITS = ("gpu", "tpu", "cpu")
"""Unit names without digits, so a number found in a message is a count."""
SHARE_NAMES = ("nlp", "cv", "asr", "ops", "lab", "web")
SUBMIT_TIMES = (0, 5, 10, 15, 20, 25, 30)
"""A coarse grid: jobs are often submitted at the same instant."""

ROLES = (
    ("borrower", "mixed", "owner"),
    ("owner", "mixed", "borrower"),
    ("mixed", "borrower", "owner"),
)
"""Each share's role, by the share's place (the last for the third and later).
A *borrower* comes first with long jobs that borrow; an *owner* comes later with
jobs within what it owns, which may reclaim; a *mixed* share does anything."""


@dataclass(frozen=True)
class World:
    """A queue, the jobs submitted to it, and how long a preemption takes to stop a job."""

    config: QueueConfig
    jobs: tuple[JobSpec, ...]
    preemption_delay: float = 0.0


def _min_runtimes() -> st.SearchStrategy[float | None]:
    return st.sampled_from([None, None, 5.0, 20.0])


@st.composite
def shares(draw: st.DrawFn, name: str, units: tuple[str, ...], min_runtime: bool) -> Share:
    # Mostly every unit (owning 0 of some), so shares compete for the same units.
    listed = units
    if not draw(st.sampled_from([True, True, True, False])):
        listed = tuple(draw(st.lists(st.sampled_from(units), min_size=1, unique=True)))
    capacity = {unit: draw(st.sampled_from([4, 0, 1, 2, 3, 5, 6])) for unit in sorted(listed)}
    # Borrowers twice as often: they make reclaim possible.
    sharing = draw(
        st.sampled_from(
            [Sharing.LEND_AND_BORROW, Sharing.LEND_AND_BORROW, Sharing.LEND, Sharing.RESERVE]
        )
    )
    borrow_limit = -1
    if sharing is Sharing.LEND_AND_BORROW:
        # Mostly generous, so borrowers take much of what others own.
        usual = st.sampled_from([-1, -1, 100, 200, 0, 50])
        borrow_limit = draw(
            usual if draw(st.sampled_from([True, True, False])) else st.integers(0, 300)
        )
    return Share(
        name=name,
        capacity=capacity,
        sharing=sharing,
        borrow_limit=borrow_limit,
        in_share_preemption=draw(st.sampled_from([True, False])),
        weight=draw(st.sampled_from([1.0, 2.0, 0.5])),
        min_runtime_seconds=draw(_min_runtimes()) if min_runtime else None,
    )


@st.composite
def queue_configs(draw: st.DrawFn, min_runtime: bool = True) -> QueueConfig:
    """A valid queue config; ``min_runtime=False`` leaves every min_runtime_seconds unset.

    One config in four protects jobs with min_runtime_seconds: a protection blocks
    reclaim, and reclaim is what most properties are about.
    """
    min_runtime = min_runtime and draw(st.sampled_from([False, False, False, True]))
    units = UNITS[: draw(st.sampled_from([2, 1, 3]))]
    names = SHARE_NAMES[: draw(st.sampled_from([2, 3, 4, 5, 6, 1]))]
    drawn = tuple(draw(shares(name, units, min_runtime)) for name in names)
    capacity = {
        unit: max(1, sum(s.owns(unit) for s in drawn) + draw(st.sampled_from([0, 0, 1, 4])))
        for unit in units
    }
    config = QueueConfig(
        job_queue="q",
        capacity=capacity,
        shares=drawn,
        idle_assignment=draw(st.sampled_from(IdleAssignment)),
        min_runtime_seconds=draw(_min_runtimes()) if min_runtime else None,
        victim_order=draw(st.sampled_from(VictimOrder)),
    )
    assert parse_config(config_to_dict(config)) == config, "the strategy drew an invalid config"
    return config


def _counts(low: int, high: int) -> st.SearchStrategy[int]:
    """Uniform (Hypothesis favours small integers, and small jobs seldom contend)."""
    return st.sampled_from(range(low, high + 1))


@st.composite
def demands(
    draw: st.DrawFn, config: QueueConfig, share: Share, kind: str | None = None
) -> dict[str, int]:
    """Within what the share owns (``own``: such a job may reclaim), more than it owns
    of one unit (``borrow``, largest first), within its limit (``limit``), or anything
    the queue has (``queue``: such a job may be refused)."""
    kind = kind or draw(st.sampled_from(["own", "own", "limit", "borrow", "queue"]))
    owned = [u for u in config.units if share.owns(u) >= 1]
    borrowable = [u for u in config.units if config.share_limit(share, u) > share.owns(u)]
    holdable = [u for u in config.units if config.share_limit(share, u) >= 1]
    if kind == "borrow" and borrowable:
        unit = draw(st.sampled_from(borrowable))
        limit = config.share_limit(share, unit)
        return {unit: draw(st.sampled_from(range(limit, share.owns(unit), -1)))}
    if kind == "own" and owned:
        pool, tops = owned, {u: share.owns(u) for u in owned}
    elif kind != "queue" and holdable:
        pool, tops = holdable, {u: config.share_limit(share, u) for u in holdable}
    else:
        pool, tops = list(config.units), dict(config.capacity)
    units = draw(st.lists(st.sampled_from(pool), min_size=1, unique=True))
    return {unit: draw(_counts(1, tops[unit])) for unit in sorted(units)}


@st.composite
def job_streams(draw: st.DrawFn, config: QueueConfig, max_jobs: int = 16) -> tuple[JobSpec, ...]:
    """Jobs whose demands fit the queue (not always their share: those are refused);
    each share's jobs arrive from its own start on, as its role says (:data:`ROLES`)."""
    palette = draw(
        st.lists(st.integers(MIN_PRIORITY, MAX_PRIORITY), min_size=2, max_size=3, unique=True)
    )
    ranked = sorted(palette)
    per_share = max(3, max_jobs // len(config.shares))
    jobs: list[JobSpec] = []
    for index, share in enumerate(config.shares):
        role = draw(st.sampled_from(ROLES[min(index, len(ROLES) - 1)]))
        kind = {"mixed": None, "borrower": "borrow", "owner": "own"}[role]
        arrival = {"mixed": SUBMIT_TIMES, "borrower": (0,), "owner": SUBMIT_TIMES[2:]}[role]
        start = draw(st.sampled_from(arrival))
        shortest = 20 if role == "borrower" else 1
        for _ in range(draw(_counts(1, per_share))):
            lateness = draw(st.sampled_from([0, 0, 1, 2]))
            # A borrower's or owner's later jobs are more urgent: they preempt in the share.
            priority = ranked[min(lateness, len(ranked) - 1)]
            if role == "mixed":
                priority = draw(st.sampled_from(palette))
            jobs.append(
                JobSpec(
                    id=f"j{len(jobs):02d}",
                    share=share.name,
                    demand=draw(demands(config, share, kind)),
                    duration=float(draw(_counts(shortest, 60))),
                    submit=float(start + 5 * lateness),
                    priority=priority,
                    preemption_retries=draw(st.one_of(st.none(), st.integers(0, 3))),
                    checkpoint_interval=draw(st.one_of(st.none(), st.integers(1, 20).map(float))),
                    preemptible=draw(st.sampled_from([True, True, True, True, True, False])),
                )
            )
    return tuple(jobs)


@st.composite
def worlds(
    draw: st.DrawFn,
    *,
    min_runtime: bool = True,
    delays: tuple[float, ...] = (0.0, 3.0),
    max_jobs: int = 16,
) -> World:
    config = draw(queue_configs(min_runtime=min_runtime))
    jobs = draw(job_streams(config, max_jobs))
    return World(config, jobs, draw(st.sampled_from(delays)))
