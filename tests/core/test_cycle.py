"""One table case per documented rule and per reason code; messages word for word."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from airflow_quota_provider.core import (
    IdleAssignment,
    QueueConfig,
    RunningJob,
    VictimOrder,
    WaitingJob,
    schedule,
)
from airflow_quota_provider.core.model import Backend
from tests.core.builders import queue, running, share, state, waiting

LAB = share  # readability in tables: LAB("nlp").capacity(gpu=8).lend_and_borrow()


@dataclass
class Case:
    config: QueueConfig
    running: list[RunningJob]
    waiting: list[WaitingJob]
    want_admit: dict[str, dict[str, int]] = field(default_factory=dict)
    want_preempt: list[tuple[str, str, str]] = field(default_factory=list)
    """(victim, kind, preemptor)"""
    want_waiting: dict[str, tuple[str, str]] = field(default_factory=dict)
    """job -> (code, message); every waiting job must be listed."""
    want_fail: dict[str, tuple[str, str]] = field(default_factory=dict)
    now: float = 100.0


two_shares = queue(
    share("nlp").capacity(gpu=8).lend_and_borrow(),
    share("cv").capacity(gpu=8).lend_and_borrow(),
    gpu=16,
)

reclaim_and_in_share = queue(
    share("a").capacity(gpu=8).in_share_preemption(), share("b").capacity(gpu=4), gpu=12
)

CASES = {
    "a share uses its own capacity first and borrows nothing": Case(
        two_shares,
        [],
        [waiting("n1", "nlp", gpu=8)],
        want_admit={"n1": {"gpu": 0}},
    ),
    "jobs of a share start by priority, then by submission time": Case(
        queue(share("nlp").capacity(gpu=4).lend_and_borrow(limit=0), gpu=4),
        [],
        [
            waiting("early-low", "nlp", priority=1, submitted=0, gpu=2),
            waiting("late-high", "nlp", priority=9, submitted=5, gpu=2),
            waiting("mid-high", "nlp", priority=9, submitted=3, gpu=2),
        ],
        want_admit={"mid-high": {"gpu": 0}, "late-high": {"gpu": 0}},
        want_waiting={
            "early-low": (
                "BORROW_LIMIT_REACHED",
                "nlp needs 2 gpu; it uses 4 of 4 and may borrow 0 more (borrow_limit 0%)",
            )
        },
    ),
    "a lend-and-borrow share borrows idle capacity of another share": Case(
        two_shares,
        [],
        [waiting("n1", "nlp", gpu=12)],
        want_admit={"n1": {"gpu": 4}},
    ),
    "capacity no share owns is lent to borrowers": Case(
        queue(share("nlp").capacity(gpu=4).lend_and_borrow(), gpu=10),
        [],
        [waiting("n1", "nlp", gpu=10)],
        want_admit={"n1": {"gpu": 6}},
    ),
    "the borrow limit caps what a share holds at capacity x (1 + limit/100)": Case(
        queue(
            share("nlp").capacity(gpu=8).lend_and_borrow(limit=50),
            share("cv").capacity(gpu=8).lend(),
            gpu=16,
        ),
        [running("n0", "nlp", gpu=11)],
        [waiting("n1", "nlp", gpu=2)],
        want_waiting={
            "n1": (
                "BORROW_LIMIT_REACHED",
                "nlp needs 2 gpu; it uses 11 of 8 and may borrow 1 more (borrow_limit 50%)",
            )
        },
    ),
    "the README's example message for borrow_limit 0": Case(
        queue(
            share("nlp").capacity(**{"ml.p4d.24xlarge": 8}).lend_and_borrow(limit=0),
            share("cv").capacity(**{"ml.p4d.24xlarge": 8}).lend(),
            **{"ml.p4d.24xlarge": 16},
        ),
        # terminating given: mypy cannot tell the unpacked dict's key from that bool parameter
        [running("n0", "nlp", terminating=False, **{"ml.p4d.24xlarge": 8})],
        [waiting("n1", "nlp", **{"ml.p4d.24xlarge": 2})],
        want_waiting={
            "n1": (
                "BORROW_LIMIT_REACHED",
                "nlp needs 2 ml.p4d.24xlarge; it uses 8 of 8 and may borrow 0 more "
                "(borrow_limit 0%)",
            )
        },
    ),
    "an unlimited borrower is stopped by what the queue has free, not by a borrow limit": Case(
        two_shares,
        [running("n0", "nlp", gpu=15)],
        [waiting("n1", "nlp", gpu=2)],
        want_waiting={
            "n1": (
                "QUEUE_CAPACITY_IN_USE",
                "nlp needs 2 gpu; it uses 15 of 8 and may borrow without limit (borrow_limit -1), "
                "but job queue q has 16 gpu in all, 1 free; nlp holds 15",
            )
        },
    ),
    "an unlimited borrower beside another share's jobs is told who holds the queue": Case(
        two_shares,
        [running("n0", "nlp", gpu=10), running("c0", "cv", gpu=6)],
        [waiting("n1", "nlp", gpu=8)],
        want_waiting={
            "n1": (
                "QUEUE_CAPACITY_IN_USE",
                "nlp needs 8 gpu; it uses 10 of 8 and may borrow without limit (borrow_limit -1), "
                "but job queue q has 16 gpu in all, 0 free; nlp holds 10, cv 6",
            )
        },
    ),
    "a borrow limit above what the queue has is not what stops a share": Case(
        queue(share("nlp").capacity(gpu=8).lend_and_borrow(limit=200), gpu=16),
        [running("n0", "nlp", gpu=14)],
        [waiting("n1", "nlp", gpu=4)],
        want_waiting={
            "n1": (
                "QUEUE_CAPACITY_IN_USE",
                "nlp needs 4 gpu; it uses 14 of 8 and its borrow_limit 200% would let it hold "
                "24, but job queue q has 16 gpu in all, 2 free; nlp holds 14",
            )
        },
    ),
    "a borrow limit that allows exactly what the queue has is the limit reached": Case(
        queue(share("nlp").capacity(gpu=8).lend_and_borrow(limit=100), gpu=16),
        [running("n0", "nlp", gpu=15)],
        [waiting("n1", "nlp", gpu=2)],
        want_waiting={
            "n1": (
                "BORROW_LIMIT_REACHED",
                "nlp needs 2 gpu; it uses 15 of 8 and may borrow 1 more (borrow_limit 100%)",
            )
        },
    ),
    "idle capacity of a RESERVE share is not counted free for a borrower": Case(
        queue(share("prod").capacity(gpu=4).reserve(), share("nlp").capacity(gpu=4), gpu=16),
        [running("n0", "nlp", gpu=10)],
        [waiting("n1", "nlp", gpu=7)],
        want_waiting={
            "n1": (
                "QUEUE_CAPACITY_IN_USE",
                "nlp needs 7 gpu; it uses 10 of 4 and may borrow without limit (borrow_limit -1), "
                "but job queue q has 16 gpu in all, 2 free (4 more idle in RESERVE shares, which "
                "do not lend it); nlp holds 10",
            )
        },
    ),
    "in a pools fleet the message names the fleet": Case(
        replace(two_shares, backend=Backend.AIRFLOW_POOLS),
        [running("n0", "nlp", gpu=13), running("c0", "cv", gpu=1)],
        [waiting("n1", "nlp", gpu=4)],
        want_waiting={
            "n1": (
                "QUEUE_CAPACITY_IN_USE",
                "nlp needs 4 gpu; it uses 13 of 8 and may borrow without limit (borrow_limit -1), "
                "but fleet q has 16 gpu in all, 2 free; nlp holds 13, cv 1",
            )
        },
    ),
    "a LEND share never borrows": Case(
        queue(share("nlp").capacity(gpu=8).lend(), share("cv").capacity(gpu=8).lend(), gpu=16),
        [running("n0", "nlp", gpu=6)],
        [waiting("n1", "nlp", gpu=4)],
        want_waiting={
            "n1": (
                "BORROWING_NOT_ALLOWED",
                "nlp needs 4 gpu; it uses 6 of 8 and its sharing strategy LEND does not borrow",
            )
        },
    ),
    "a RESERVE share never lends its idle capacity": Case(
        queue(share("prod").capacity(gpu=8).reserve(), share("cv").capacity(gpu=8), gpu=16),
        [],
        [waiting("c1", "cv", gpu=10)],
        want_waiting={
            "c1": (
                "NO_IDLE_CAPACITY",
                "cv needs 10 gpu; it uses 0 of 8 and may borrow without limit (borrow_limit -1), "
                "but only 0 idle gpu can be lent to it (2 more needed)",
            )
        },
    ),
    "a RESERVE share uses its own idle capacity": Case(
        queue(share("prod").capacity(gpu=8).reserve(), share("cv").capacity(gpu=8), gpu=16),
        [running("c0", "cv", gpu=8)],
        [waiting("p1", "prod", gpu=8)],
        want_admit={"p1": {"gpu": 0}},
    ),
    "idle capacity goes to borrowers first come, first served": Case(
        queue(
            share("nlp").capacity(gpu=4),
            share("cv").capacity(gpu=4),
            share("idle").capacity(gpu=4).lend(),
            gpu=12,
        ),
        [running("n0", "nlp", gpu=4), running("c0", "cv", gpu=4)],
        [waiting("c1", "cv", submitted=10, gpu=3), waiting("n1", "nlp", submitted=20, gpu=3)],
        want_admit={"c1": {"gpu": 3}},
        want_waiting={
            "n1": (
                "NO_IDLE_CAPACITY",
                "nlp needs 3 gpu; it uses 4 of 4 and may borrow without limit (borrow_limit -1), "
                "but only 1 idle gpu can be lent to it (2 more needed)",
            )
        },
    ),
    "an earlier borrower that does not fit holds idle capacity against later ones": Case(
        queue(
            share("nlp").capacity(gpu=4),
            share("cv").capacity(gpu=4),
            share("idle").capacity(gpu=4).lend(),
            gpu=12,
        ),
        [running("n0", "nlp", gpu=4), running("c0", "cv", gpu=4)],
        [waiting("c1", "cv", submitted=10, gpu=6), waiting("n1", "nlp", submitted=20, gpu=1)],
        want_waiting={
            "c1": (
                "NO_IDLE_CAPACITY",
                "cv needs 6 gpu; it uses 4 of 4 and may borrow without limit (borrow_limit -1), "
                "but only 4 idle gpu can be lent to it (2 more needed)",
            ),
            "n1": (
                "BEHIND_EARLIER_BORROWER",
                "nlp needs to borrow 1 gpu; idle gpu is held for c1, which borrows first (FIFO)",
            ),
        },
    ),
    "a share reclaims lent capacity by preempting the borrower": Case(
        two_shares,
        [running("c0", "cv", started=0, gpu=8), running("c1", "cv", started=50, gpu=6)],
        [waiting("n1", "nlp", gpu=4)],
        want_preempt=[("c1", "RECLAIM", "n1")],
        want_waiting={
            "n1": ("PREEMPTION_IN_PROGRESS", "nlp preempts 1 job to make room: c1"),
        },
    ),
    "reclaim takes lower priority, then most recently started, and only what it needs": Case(
        two_shares,
        [
            running("c-mid", "cv", priority=3, started=0, gpu=8),
            running("c-old", "cv", priority=1, started=10, gpu=2),
            running("c-new", "cv", priority=1, started=20, gpu=2),
            running("c-high", "cv", priority=5, started=30, gpu=2),
        ],
        [waiting("n1", "nlp", gpu=4)],
        want_preempt=[("c-new", "RECLAIM", "n1")],
        want_waiting={"n1": ("PREEMPTION_IN_PROGRESS", "nlp preempts 1 job to make room: c-new")},
    ),
    "reclaim stops at the owner's capacity: jobs within capacity are never taken": Case(
        queue(
            share("nlp").capacity(gpu=8),
            share("cv").capacity(gpu=4),
            share("asr").capacity(gpu=4),
            gpu=16,
        ),
        [
            running("a-own", "asr", priority=0, started=90, gpu=4),
            running("c-own", "cv", priority=0, started=0, gpu=4),
            running("c-borrow", "cv", priority=9, started=0, gpu=6),
        ],
        [waiting("n1", "nlp", gpu=8)],
        want_preempt=[("c-borrow", "RECLAIM", "n1")],
        want_waiting={
            "n1": ("PREEMPTION_IN_PROGRESS", "nlp preempts 1 job to make room: c-borrow")
        },
    ),
    "reclaim takes a job that borrowed when it started before one that did not": Case(
        two_shares,
        [
            running("c-within", "cv", priority=0, started=90, gpu=8),
            RunningJob("c-borrowed", "cv", {"gpu": 4}, 9, 10.0, borrowing=True),
        ],
        [waiting("n1", "nlp", gpu=8)],
        want_preempt=[("c-borrowed", "RECLAIM", "n1")],
        want_waiting={
            "n1": ("PREEMPTION_IN_PROGRESS", "nlp preempts 1 job to make room: c-borrowed")
        },
    ),
    "a borrower admitted in this cycle never makes an older job of its share a victim": Case(
        queue(
            share("x").capacity(tpu=2),
            share("y").capacity(gpu=4, tpu=2),
            gpu=4,
            tpu=4,
        ),
        [running("y0", "y", started=0, tpu=2)],
        [
            waiting("y1", "y", priority=1, submitted=5, tpu=1),
            waiting("x1", "x", submitted=5, gpu=1),
            waiting("x2", "x", submitted=5, tpu=2),
        ],
        want_admit={"y1": {"tpu": 1}, "x1": {"gpu": 1}},
        want_waiting={
            "x2": (
                "WAITING_FOR_OWN_CAPACITY",
                "x needs 2 tpu within what it owns (uses 0 of 2); 1 free, the rest is held by "
                "jobs that cannot be preempted now",
            )
        },
    ),
    "the last victim may take its share below its capacity": Case(
        two_shares,
        [running("c-big", "cv", started=0, gpu=12)],
        [waiting("n1", "nlp", gpu=8)],
        want_preempt=[("c-big", "RECLAIM", "n1")],
        want_waiting={"n1": ("PREEMPTION_IN_PROGRESS", "nlp preempts 1 job to make room: c-big")},
    ),
    "a job that would borrow never reclaims; it waits for its own capacity": Case(
        two_shares,
        [running("c0", "cv", gpu=12), running("n0", "nlp", gpu=4)],
        [waiting("n1", "nlp", gpu=6)],
        want_waiting={
            "n1": (
                "WAITING_FOR_OWN_CAPACITY",
                "nlp needs 6 gpu; it uses 4 of 8 and waits for its own jobs to leave room (a job "
                "that would borrow does not reclaim lent gpu); only 0 idle gpu can be lent to it "
                "meanwhile (6 more needed)",
            )
        },
    ),
    "reclaim and in-share preemption together: the urgent job takes both, never borrowing": Case(
        reclaim_and_in_share,
        [
            running("a-low", "a", priority=1, started=0, gpu=2),
            running("b-own", "b", started=0, gpu=4),
            running("b-borrow", "b", started=10, gpu=6),
        ],
        [waiting("a-urgent", "a", priority=9999, gpu=8)],
        want_preempt=[("b-borrow", "RECLAIM", "a-urgent"), ("a-low", "IN_SHARE", "a-urgent")],
        want_waiting={
            "a-urgent": (
                "PREEMPTION_IN_PROGRESS",
                "a preempts 2 jobs to make room: b-borrow, a-low",
            )
        },
    ),
    "without in-share preemption the urgent job waits for its own jobs, not to borrow": Case(
        queue(share("a").capacity(gpu=8), share("b").capacity(gpu=4), gpu=12),
        [
            running("a-low", "a", priority=1, started=0, gpu=2),
            running("b-own", "b", started=0, gpu=4),
            running("b-borrow", "b", started=10, gpu=6),
        ],
        [waiting("a-urgent", "a", priority=9999, gpu=8)],
        want_waiting={
            "a-urgent": (
                "WAITING_FOR_OWN_CAPACITY",
                "a needs 8 gpu; it uses 2 of 8 and waits for its own jobs to leave room (a job "
                "that would borrow does not reclaim lent gpu); only 0 idle gpu can be lent to it "
                "meanwhile (8 more needed)",
            )
        },
    ),
    "a plan that reclaims and preempts in the share keeps only the victims it needs": Case(
        reclaim_and_in_share,
        [
            running("a-low", "a", priority=1, started=0, gpu=2),
            running("a-mid", "a", priority=5, started=0, gpu=4),
            running("b-own", "b", started=0, gpu=4),
            running("b-borrow", "b", started=10, gpu=2),
        ],
        [waiting("a-top", "a", priority=9, gpu=6)],
        want_preempt=[("b-borrow", "RECLAIM", "a-top"), ("a-mid", "IN_SHARE", "a-top")],
        want_waiting={
            "a-top": ("PREEMPTION_IN_PROGRESS", "a preempts 2 jobs to make room: b-borrow, a-mid")
        },
    ),
    "a job that would still borrow after in-share preemption reclaims nothing": Case(
        reclaim_and_in_share,
        [
            running("a-low", "a", priority=1, started=0, gpu=2),
            running("a-peer", "a", priority=9, started=0, gpu=4),
            running("b-own", "b", started=0, gpu=4),
            running("b-borrow", "b", started=10, gpu=2),
        ],
        [waiting("a-top", "a", priority=9, gpu=6)],
        want_waiting={
            "a-top": (
                "WAITING_FOR_OWN_CAPACITY",
                "a needs 6 gpu; it uses 6 of 8 and waits for its own jobs to leave room (a job "
                "that would borrow does not reclaim lent gpu); only 0 idle gpu can be lent to it "
                "meanwhile (6 more needed)",
            )
        },
    ),
    "in-share preemption takes a strictly lower-priority job of the same share": Case(
        queue(share("nlp").capacity(gpu=8).lend_and_borrow(limit=0).in_share_preemption(), gpu=8),
        [
            running("low", "nlp", priority=1, gpu=4),
            running("same", "nlp", priority=5, gpu=4),
        ],
        [waiting("urgent", "nlp", priority=5, gpu=4), waiting("top", "nlp", priority=9, gpu=4)],
        want_preempt=[("low", "IN_SHARE", "top")],
        want_waiting={
            "top": ("PREEMPTION_IN_PROGRESS", "nlp preempts 1 job to make room: low"),
            "urgent": (
                "BEHIND_IN_SHARE",
                "2nd in share nlp's queue; behind top (priority 9 > 5), which is waiting: "
                "PREEMPTION_IN_PROGRESS",
            ),
        },
    ),
    "without in-share preemption an urgent job waits": Case(
        queue(share("nlp").capacity(gpu=8).lend_and_borrow(limit=0), gpu=8),
        [running("low", "nlp", priority=1, gpu=8)],
        [waiting("top", "nlp", priority=9, gpu=4)],
        want_waiting={
            "top": (
                "BORROW_LIMIT_REACHED",
                "nlp needs 4 gpu; it uses 8 of 8 and may borrow 0 more (borrow_limit 0%)",
            )
        },
    ),
    "equal priority is never preempted in the share": Case(
        queue(share("nlp").capacity(gpu=8).lend().in_share_preemption(), gpu=8),
        [running("peer", "nlp", priority=5, gpu=8)],
        [waiting("other", "nlp", priority=5, gpu=8)],
        want_waiting={
            "other": (
                "BORROWING_NOT_ALLOWED",
                "nlp needs 8 gpu; it uses 8 of 8 and its sharing strategy LEND does not borrow",
            )
        },
    ),
    "a share above its lowered capacity is preempted whatever its strategy": Case(
        queue(share("nlp").capacity(gpu=12), share("cv").capacity(gpu=4).lend(), gpu=16),
        [running("c0", "cv", started=0, gpu=4), running("c1", "cv", started=5, gpu=4)],
        [waiting("n1", "nlp", gpu=12)],
        want_preempt=[("c1", "CAPACITY_REDUCED", "n1")],
        want_waiting={"n1": ("PREEMPTION_IN_PROGRESS", "nlp preempts 1 job to make room: c1")},
    ),
    "a job that no longer fits fails and does not block the jobs behind it": Case(
        queue(share("nlp").capacity(gpu=4).lend(), share("cv").capacity(gpu=4).lend(), gpu=16),
        [],
        [waiting("big", "nlp", submitted=0, gpu=6), waiting("small", "nlp", submitted=1, gpu=2)],
        want_admit={"small": {"gpu": 0}},
        want_fail={
            "big": (
                "NO_LONGER_FITS",
                "the job needs 6 gpu; share nlp may hold at most 4 (owns 4, LEND does not borrow)"
                " (capacity lowered)",
            )
        },
    ),
    "a disabled share dispatches nothing and keeps its running jobs": Case(
        queue(share("nlp").capacity(gpu=8).disabled(), gpu=8),
        [running("n0", "nlp", gpu=2)],
        [waiting("n1", "nlp", submitted=0, gpu=2), waiting("n2", "nlp", submitted=1, gpu=2)],
        want_waiting={
            "n1": ("SHARE_DISABLED", "share nlp is DISABLED; its jobs wait until it is ENABLED"),
            "n2": ("SHARE_DISABLED", "share nlp is DISABLED; its jobs wait until it is ENABLED"),
        },
    ),
    "a preemptor waits for its victims to stop without choosing more": Case(
        two_shares,
        [
            running("c0", "cv", started=0, gpu=8),
            running("c1", "cv", started=50, terminating=True, gpu=6),
            running("c2", "cv", started=60, gpu=2),
        ],
        [waiting("n1", "nlp", gpu=6)],
        want_waiting={
            "n1": ("PREEMPTION_IN_PROGRESS", "nlp waits for preempted jobs to stop: c1"),
        },
    ),
    "a job may wait for room another job's victims free beyond its need": Case(
        queue(
            share("nlp").capacity(gpu=4),
            share("asr").capacity(gpu=4),
            share("cv").capacity(gpu=8),
            gpu=16,
        ),
        [running("c0", "cv", started=0, gpu=8), running("c1", "cv", started=50, gpu=8)],
        [waiting("n1", "nlp", gpu=4), waiting("a1", "asr", submitted=1, gpu=4)],
        want_preempt=[("c1", "RECLAIM", "n1")],
        want_waiting={
            "n1": ("PREEMPTION_IN_PROGRESS", "nlp preempts 1 job to make room: c1"),
            "a1": ("PREEMPTION_IN_PROGRESS", "asr waits for preempted jobs to stop: c1"),
        },
    ),
    "capacity freed for a preemptor is not taken by another job": Case(
        queue(
            share("nlp").capacity(gpu=8),
            share("cv").capacity(gpu=4),
            share("asr").capacity(gpu=4),
            gpu=16,
        ),
        [
            running("c0", "cv", started=0, gpu=4),
            running("c1", "cv", started=50, terminating=True, gpu=8),
            running("a0", "asr", gpu=4),
        ],
        [waiting("n1", "nlp", submitted=0, gpu=8), waiting("a1", "asr", submitted=1, gpu=2)],
        want_waiting={
            "n1": ("PREEMPTION_IN_PROGRESS", "nlp waits for preempted jobs to stop: c1"),
            "a1": (
                "NO_IDLE_CAPACITY",
                "asr needs 2 gpu; it uses 4 of 4 and may borrow without limit (borrow_limit -1), "
                "but only 0 idle gpu can be lent to it (2 more needed)",
            ),
        },
    ),
}


def _run(case: Case) -> None:
    decisions = schedule(state(case.config, case.running, case.waiting), case.now)
    assert {a.job_id: dict(a.borrowed) for a in decisions.admit} == case.want_admit
    assert [(p.job_id, p.kind.value, p.preemptor) for p in decisions.preempt] == case.want_preempt
    assert {f.job_id: (f.code.value, f.message) for f in decisions.fail} == case.want_fail
    got_waiting = {job: (w.code.value, w.message) for job, w in decisions.waiting.items()}
    assert got_waiting == case.want_waiting


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_cycle(case: Case) -> None:
    _run(case)


def test_a_victim_out_of_preemption_retries_is_marked_to_fail() -> None:
    victim = RunningJob("c1", "cv", {"gpu": 6}, 0, 50.0, preemptions=2, preemption_retries=2)
    config = two_shares
    decisions = schedule(
        state(config, [running("c0", "cv", gpu=8), victim], [waiting("n1", "nlp", gpu=4)]), 100
    )
    (preemption,) = decisions.preempt
    assert (preemption.job_id, preemption.fails) == ("c1", True)
    assert preemption.message == (
        "share cv borrows 6 gpu (uses 14, owns 8); share nlp reclaims it for job n1, "
        "which needs 4 gpu within what its share owns"
    )
    assert preemption.work_lost == 50.0 * 6


def test_min_runtime_protects_young_borrowers_and_asks_for_a_recheck() -> None:
    config = queue(
        share("nlp").capacity(gpu=8),
        share("cv").capacity(gpu=8).min_runtime(600),
        gpu=16,
    )
    jobs = [running("c0", "cv", started=0, gpu=8), running("c1", "cv", started=50, gpu=8)]
    decisions = schedule(state(config, jobs, [waiting("n1", "nlp", gpu=4)]), 100)
    assert decisions.preempt == ()
    wait = decisions.waiting["n1"]
    assert (wait.code.value, wait.message) == (
        "WAITING_FOR_OWN_CAPACITY",
        "nlp needs 4 gpu within what it owns (uses 0 of 8); 0 free, the rest is held by jobs "
        "that cannot be preempted now; borrowed jobs are protected by min_runtime_seconds "
        "until t=600",
    )
    assert decisions.recheck_at == 600
    later = schedule(state(config, jobs, [waiting("n1", "nlp", gpu=4)]), 600)
    assert [(p.job_id, p.kind.value) for p in later.preempt] == [("c0", "RECLAIM")]


def test_min_runtime_off_by_default_reclaims_at_once() -> None:
    jobs = [running("c0", "cv", started=0, gpu=8), running("c1", "cv", started=99, gpu=8)]
    decisions = schedule(state(two_shares, jobs, [waiting("n1", "nlp", gpu=4)]), 100)
    assert [p.job_id for p in decisions.preempt] == ["c1"]


def test_a_job_min_runtime_wins_over_its_share() -> None:
    config = queue(
        share("nlp").capacity(gpu=8), share("cv").capacity(gpu=8).min_runtime(600), gpu=16
    )
    jobs = [
        running("c0", "cv", started=0, gpu=8),
        RunningJob("c1", "cv", {"gpu": 8}, 0, 50.0, min_runtime_seconds=0),
    ]
    decisions = schedule(state(config, jobs, [waiting("n1", "nlp", gpu=4)]), 100)
    assert [p.job_id for p in decisions.preempt] == ["c1"]
    protected = [
        RunningJob("c0", "cv", {"gpu": 8}, 0, 0.0, min_runtime_seconds=900),
        RunningJob("c1", "cv", {"gpu": 8}, 0, 50.0, min_runtime_seconds=900),
    ]
    decisions = schedule(state(two_shares, protected, [waiting("n1", "nlp", gpu=4)]), 100)
    assert (decisions.preempt, decisions.recheck_at) == ((), 900)


def test_a_job_that_is_not_preemptible_is_passed_over_for_another_victim() -> None:
    jobs = [
        running("c0", "cv", started=0, gpu=8),
        RunningJob("c1", "cv", {"gpu": 4}, 0, 80.0, preemptible=False),
        running("c2", "cv", started=10, gpu=4),
    ]
    decisions = schedule(state(two_shares, jobs, [waiting("n1", "nlp", gpu=4)]), 100)
    assert [p.job_id for p in decisions.preempt] == ["c2"]


def test_a_reclaim_waits_when_only_jobs_that_are_not_preemptible_borrow() -> None:
    jobs = [
        RunningJob("c0", "cv", {"gpu": 8}, 0, 0.0, preemptible=False),
        RunningJob("c1", "cv", {"gpu": 8}, 0, 80.0, preemptible=False),
    ]
    decisions = schedule(state(two_shares, jobs, [waiting("n1", "nlp", gpu=4)]), 100)
    assert decisions.preempt == ()
    wait = decisions.waiting["n1"]
    assert (wait.code.value, wait.message) == (
        "WAITING_FOR_OWN_CAPACITY",
        "nlp needs 4 gpu within what it owns (uses 0 of 8); 0 free, the rest is held by jobs "
        "that cannot be preempted now; c0, c1 would make room but are not preemptible",
    )


def test_in_share_preemption_passes_over_jobs_that_are_not_preemptible() -> None:
    config = queue(share("a").capacity(gpu=8).in_share_preemption(), gpu=8)
    jobs = [
        RunningJob("low", "a", {"gpu": 4}, 1, 0.0, preemptible=False),
        RunningJob("lower", "a", {"gpu": 4}, 0, 0.0, preemptible=False),
    ]
    decisions = schedule(state(config, jobs, [waiting("urgent", "a", 9, gpu=4)]), 100)
    assert decisions.preempt == ()
    assert decisions.waiting["urgent"].message.endswith(
        "; low, lower would make room but are not preemptible"
    )
    jobs[1] = RunningJob("lower", "a", {"gpu": 4}, 0, 0.0)
    decisions = schedule(state(config, jobs, [waiting("urgent", "a", 9, gpu=4)]), 100)
    assert [(p.job_id, p.kind.value) for p in decisions.preempt] == [("lower", "IN_SHARE")]


def test_a_waiting_job_carries_its_protection_into_the_run() -> None:
    job = WaitingJob("j", "a", {"gpu": 1}, preemptible=False, min_runtime_seconds=60)
    started = job.started(5.0)
    assert (started.preemptible, started.min_runtime_seconds) == (False, 60)
    assert (started.requeued().preemptible, started.requeued().min_runtime_seconds) == (False, 60)


def _borrowers_config(idle: IdleAssignment) -> QueueConfig:
    base = queue(
        share("nlp").capacity(gpu=4).weight(1),
        share("cv").capacity(gpu=4).weight(3),
        share("idle").capacity(gpu=8).lend(),
        gpu=16,
    )
    return QueueConfig(base.job_queue, base.capacity, base.shares, idle_assignment=idle)


@pytest.mark.parametrize(
    ("idle", "want_admitted"),
    [
        pytest.param(IdleAssignment.FIFO, ["n1", "n2", "n3", "n4"], id="FIFO: by arrival"),
        pytest.param(IdleAssignment.FAIR, ["c1", "n1", "c2", "c3"], id="FAIR: by borrowed/weight"),
    ],
)
def test_idle_assignment(idle: IdleAssignment, want_admitted: list[str]) -> None:
    jobs = [running("n0", "nlp", gpu=4), running("c0", "cv", gpu=4), running("i0", "idle", gpu=4)]
    queued = [waiting(f"n{i}", "nlp", submitted=i, gpu=1) for i in range(1, 5)]
    queued += [waiting(f"c{i}", "cv", submitted=10 + i, gpu=1) for i in range(1, 5)]
    decisions = schedule(state(_borrowers_config(idle), jobs, queued), 100)
    assert sorted(a.job_id for a in decisions.admit) == sorted(want_admitted)


@pytest.mark.parametrize(
    ("order", "want_victim"),
    [
        pytest.param(VictimOrder.MOST_RECENT, "recent", id="default: most recently started"),
        pytest.param(VictimOrder.LEAST_WORK_LOST, "checkpointed", id="least work lost"),
    ],
)
def test_victim_order(order: VictimOrder, want_victim: str) -> None:
    base = two_shares
    config = QueueConfig(base.job_queue, base.capacity, base.shares, victim_order=order)
    jobs = [
        running("c0", "cv", started=0, gpu=8),
        RunningJob("checkpointed", "cv", {"gpu": 4}, 0, 10.0, checkpoint_interval=30),
        RunningJob("recent", "cv", {"gpu": 4}, 0, 80.0),
    ]
    decisions = schedule(state(config, jobs, [waiting("n1", "nlp", gpu=4)]), 100)
    assert [p.job_id for p in decisions.preempt] == [want_victim]
