"""When will each waiting job start? The live state played forward through the core's rules.

:func:`forecast` copies a queue's state and plays it forward in virtual time
with the one settle loop every caller uses
(:func:`~airflow_quota_provider.core.settle.settle`), so every rule of the
core applies as it will live: sharing strategies, borrow limits, the FIFO
hold for borrowers, reclaim, in-share preemption, ``min_runtime_seconds``,
preemption retries. A play gives every job one duration, then:

1. **Settle** at ``now``: what can start now does; victims chosen now stop
   after ``preemption_delay``.
2. **Advance** to the next event: a running job's end (its duration less the
   work it has done), a victim stopping, or the ``recheck_at`` of a
   protection expiring.
3. **Apply** every event of that instant (an ended job frees its capacity, a
   stopped victim goes back to its place and later resumes from its last
   checkpoint), then settle again; an admission of a job that waited at
   ``now`` is its start. Repeat until every such job has started or ended, or
   nothing is left to happen.

**Likely start and range.** Each job's
:class:`~airflow_quota_provider.core.durations.DurationEstimate` is a
distribution (:meth:`~airflow_quota_provider.core.durations.DurationEstimate.quantile`).
``samples`` plays draw every job's duration from it independently; a job's
``likely`` start is the median of its starts over them. Drawing matters: a job
that needs one of twenty running jobs to end starts when the first of them
ends, much sooner than their median durations say; one that needs fifteen of
them, later. Two more plays give every job its 25th and 75th percentile
duration at once; the range (``earliest`` .. ``latest``) is the earliest and
latest start over all plays. The draws come from ``draw`` (injected like the
clock): :func:`seeded` hashes the play and the job id, so a job keeps its draws
from one forecast to the next and starts do not jump between two reads.

A job that never starts says why with the core's own reason: the wait of the
last cycle (``SHARE_DISABLED``, ...) or the failure that ended it
(``NO_LONGER_FITS``, ``PREEMPTION_RETRIES_EXHAUSTED``). A play never changes the
capacity, so a job that does not fit says it needs more than the capacity is now,
not that the capacity was lowered (the live cycle's words).

**What it waits for.** Each start also says which ends made room for it (the
ends applied at the instant it starts in the median play, when each was) and
which jobs were preempted for it: what ``explain`` shows.

Pure: no clock (``now`` is given), no I/O; the caller's state is not changed.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from airflow_quota_provider.core.admission import check_fits_ever
from airflow_quota_provider.core.decisions import Admission, Decisions, Failure, Preemption
from airflow_quota_provider.core.durations import NO_HISTORY, DurationEstimate
from airflow_quota_provider.core.jobs import RunningJob, WaitingJob
from airflow_quota_provider.core.reasons import FailureCode
from airflow_quota_provider.core.settle import settle, stopped
from airflow_quota_provider.core.state import QueueState

SAMPLES = 3
"""Plays with drawn durations by default; the likely start is their median."""
RANGE_QUANTILES = (0.25, 0.75)
"""The duration quantiles of the two plays that widen the range."""
RESOLUTION = 60.0
RELATIVE_RESOLUTION = 0.02
"""By default a play applies together the events of each minute, or of each 2 % of the
time from now when that is longer (see :func:`forecast`'s ``resolution``)."""
_END, _STOP, _RECHECK = range(3)
"""Event kinds, applied in this order at one instant (as the simulator does: a job that
ends when its preemption completes has succeeded)."""
_NONE: Mapping[str, float] = MappingProxyType({})
WAITS_FOR_KEPT = 10
"""At most this many of the ends that made room for a start are kept with it."""

Draw = Callable[[int, str], float]
"""The quantile (0 < q < 1) of a job's duration in a sampled play: ``draw(play, job_id)``."""


def seeded(seed: int = 0) -> Draw:
    """Draws from a hash of ``seed``, the play and the job id: the same job gets the same
    draws in every forecast, whatever else is in the state."""

    def draw(play: int, job_id: str) -> float:
        digest = hashlib.blake2b(f"{seed}:{play}:{job_id}".encode(), digest_size=8).digest()
        return (int.from_bytes(digest, "big") + 0.5) / 2**64

    return draw


def range_basis(samples: int) -> str:
    """How a forecast's likely start and range are made, for people."""
    return (
        f"likely: the median start over {samples} plays forward with every job's duration "
        f"drawn from its estimate; range: the earliest and latest start over those and two "
        f"plays with every job at its 25th and 75th percentile duration"
    )


@dataclass(frozen=True, slots=True)
class NoStart:
    """Why a job does not start in the forecast: a wait code (``SHARE_DISABLED``, ...) or a
    failure code (``NO_LONGER_FITS``, ...) of the core, with its message."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class StartForecast:
    """When one waiting job is expected to start.

    :param likely: the median of its starts over the sampled plays; ``None`` when one of
        them does not start it (``no_start`` says why).
    :param earliest: the earliest start over all plays.
    :param latest: the latest start over all plays; ``None`` when a play never starts it.
    :param ends_before: job ends before its start in the median play (every job that
        ends before it starts, whether or not it freed what it needed); 0 without a start.
    :param guessed_ends_before: how many of those ends rest on a guessed duration.
    :param borrowing: it starts borrowing capacity (median play).
    :param victims: jobs preempted to make room for it (median play).
    :param waits_for: the ends that made room for it: the jobs whose ends were applied
        at the instant it starts in the median play, with when each ended (at most
        :data:`WAITS_FOR_KEPT`; none when it starts at once, or when a protection
        expiring or a victim stopping let it start).
    """

    job_id: str
    share: str
    likely: float | None
    earliest: float | None
    latest: float | None
    ends_before: int = 0
    guessed_ends_before: int = 0
    borrowing: bool = False
    victims: tuple[str, ...] = ()
    no_start: NoStart | None = None
    waits_for: tuple[tuple[str, float], ...] = ()

    @property
    def guess(self) -> bool:
        """Its start rests on at least one duration that is a guess (no history)."""
        return self.guessed_ends_before > 0


@dataclass(frozen=True)
class Forecast:
    """Start forecasts of every job waiting at ``now``, by job id; ``instants``: how many
    instants all plays settled."""

    now: float
    starts: Mapping[str, StartForecast]
    instants: int
    range_basis: str


def forecast(
    state: QueueState,
    now: float,
    durations: Mapping[str, DurationEstimate],
    *,
    default: DurationEstimate = NO_HISTORY,
    work_kept: Mapping[str, float] = _NONE,
    preemption_delay: float = 0.0,
    samples: int = SAMPLES,
    draw: Draw | None = None,
    resolution: float = RESOLUTION,
    relative_resolution: float = RELATIVE_RESOLUTION,
) -> Forecast:
    """Forecast when each job waiting in ``state`` at ``now`` starts.

    :param durations: each job's estimated total work, by job id, for running and
        waiting jobs; a running job's estimate is taken past the work it has done
        (:meth:`DurationEstimate.after`), so one that has overrun it ends soon.
    :param default: the estimate of a job missing from ``durations``.
    :param work_kept: seconds of work a waiting job resumes from (a preempted job's
        last checkpoint), by job id; others start from nothing.
    :param preemption_delay: seconds a preempted job takes to stop (a job whose
        preemption is in progress at ``now`` stops after this too).
    :param samples: plays with drawn durations (at least 1).
    :param draw: where the draws come from; :func:`seeded` ``(0)`` when not given.
    :param resolution: seconds; events at most this long after the first one not yet
        applied (or ``relative_resolution`` times its time from ``now``, when that is
        longer) are applied together, at the last of them, so a play settles fewer
        instants: a quarter as many on a fleet of 2,000 waiting jobs. A start is then
        up to that late, and the starts after it with it; both 0: every instant, exact.
        A start hours away is not known to the minute; a start soon is.
    """
    if samples < 1:
        raise ValueError(f"a forecast needs at least 1 sampled play, got {samples}")
    draw = draw or seeded()
    estimates: dict[str, DurationEstimate] = {}
    for job in state.running():
        estimates[job.id] = durations.get(job.id, default).after(job.progress(now))
    for waiting in state.waiting():
        kept = work_kept.get(waiting.id, 0.0)
        estimates[waiting.id] = durations.get(waiting.id, default).after(kept)
    guessed = {job_id for job_id, estimate in estimates.items() if estimate.guess}

    pace = _Pace(preemption_delay, resolution, relative_resolution)

    def play(quantiles: Mapping[str, float]) -> _Play:
        work = {job_id: e.quantile(quantiles[job_id]) for job_id, e in estimates.items()}
        return _Play(state, now, work, guessed, work_kept, pace).run()

    sampled = [play({job_id: draw(k, job_id) for job_id in estimates}) for k in range(samples)]
    ranged = [play(dict.fromkeys(estimates, q)) for q in RANGE_QUANTILES]
    starts = {job.id: _combine(job, sampled, ranged) for job in state.waiting()}
    instants = sum(p.instants for p in (*sampled, *ranged))
    return Forecast(now, starts, instants, range_basis(samples))


def _combine(job: WaitingJob, sampled: Sequence[_Play], ranged: Sequence[_Play]) -> StartForecast:
    drawn = [p.starts.get(job.id) for p in sampled]
    every = [*drawn, *(p.starts.get(job.id) for p in ranged)]
    known = [start for start in every if start is not None]
    earliest = min(known, default=None)
    latest = max(known) if len(known) == len(every) else None
    missing = next((p for p, start in zip(sampled, drawn, strict=True) if start is None), None)
    if missing is not None:
        return StartForecast(
            job.id, job.share, None, earliest, latest, no_start=missing.no_start(job.id)
        )
    median = sorted(sampled, key=lambda p: p.starts[job.id])[(len(sampled) - 1) // 2]
    ends, guessed_ends = median.ends_at_start[job.id]
    return StartForecast(
        job.id,
        job.share,
        median.starts[job.id],
        earliest,
        latest,
        ends_before=ends,
        guessed_ends_before=guessed_ends,
        borrowing=job.id in median.borrowing,
        victims=tuple(median.victims.get(job.id, ())),
        waits_for=median.waits_for.get(job.id, ()),
    )


@dataclass(frozen=True, slots=True)
class _Pace:
    """How a play's time moves: victims stop ``delay`` after their preemption; events
    within ``max(resolution, relative x time from now)`` are applied together."""

    delay: float
    resolution: float
    relative: float


class _Play:
    """One play forward with one total work per job: the settle loop's Applier."""

    def __init__(
        self,
        state: QueueState,
        now: float,
        work: Mapping[str, float],
        guessed: set[str],
        kept: Mapping[str, float],
        pace: _Pace,
    ) -> None:
        self.books = QueueState.from_jobs(state.config, state.running(), state.waiting())
        self.now, self.work, self.guessed = now, work, guessed
        self.delay, self.resolution, self.relative = pace.delay, pace.resolution, pace.relative
        self.kept = dict(kept)
        """Work a waiting job resumes from, by job id."""
        self.open = {job.id for job in state.waiting()}
        """Jobs waiting at ``now`` that have not started or ended yet."""
        self.events: list[tuple[float, int, int, str, int]] = []
        self.sequence = itertools.count()
        self.serial: dict[str, int] = {}
        """Bumped at every start, so an event of an earlier attempt is ignored."""
        self.failing: dict[str, bool] = {}
        self.starts: dict[str, float] = {}
        self.ends_at_start: dict[str, tuple[int, int]] = {}
        self.borrowing: set[str] = set()
        self.victims: dict[str, list[str]] = {}
        self.failed: dict[str, NoStart] = {}
        self.batch_ends: list[tuple[str, float]] = []
        """The ends applied since the last settle, with when each was."""
        self.waits_for: dict[str, tuple[tuple[str, float], ...]] = {}
        self.ends = self.guessed_ends = self.instants = 0
        self.last = Decisions()

    def run(self) -> _Play:
        for job in self.books.running():
            if job.terminating:
                self._push(self.now + self.delay, _STOP, job.id)
            else:
                self._push(self.now + self._remaining(job.id, job.progress(self.now)), _END, job.id)
        at = self.now
        changed = True
        while True:
            if changed:
                self._settle(at)
            if not self.open or not self.events:
                return self
            changed = False
            first = self.events[0][0]
            until = first + max(self.resolution, (first - self.now) * self.relative)
            self.batch_ends = []
            while self.events and self.events[0][0] <= until:
                at, kind, _, job_id, serial = heapq.heappop(self.events)
                changed |= self._happen(kind, job_id, serial, at)

    def no_start(self, job_id: str) -> NoStart:
        if job_id in self.failed:
            return self.failed[job_id]
        wait = self.last.waiting.get(job_id)
        if wait is None:  # pragma: no cover - every job left waiting has a reason
            return NoStart("UNKNOWN", f"{job_id} was left waiting without a reason")
        return NoStart(wait.code.value, wait.message)

    def _settle(self, at: float) -> None:
        settled = settle(self.books, at, self)
        self.instants += 1
        if settled.cycles:
            self.last = settled.decisions
        recheck = settled.decisions.recheck_at
        if recheck is not None and recheck > at:
            self._push(recheck, _RECHECK, "")

    def _happen(self, kind: int, job_id: str, serial: int, at: float) -> bool:
        """Apply one event; whether it changed anything (a stale one does not)."""
        if kind == _RECHECK:
            return True
        job = self.books.running_job(job_id)
        if job is None or serial != self.serial.get(job_id, 0):
            return False  # an event of an attempt that has already ended
        if kind == _END:
            self.books.remove_running(job_id)
            self.ends += 1
            if len(self.batch_ends) < WAITS_FOR_KEPT:
                self.batch_ends.append((job_id, at))
            self.guessed_ends += job_id in self.guessed
        elif job.terminating:
            self._stop(job_id, at)
        return True

    def _stop(self, job_id: str, at: float) -> None:
        result = stopped(self.books, job_id, at, fails=self.failing.pop(job_id, False))
        if result.requeued is not None:
            self.kept[job_id] = result.work_kept

    def _remaining(self, job_id: str, done: float) -> float:
        return max(0.0, self.work[job_id] - done)

    def _push(self, at: float, kind: int, job_id: str) -> None:
        event = (at, kind, next(self.sequence), job_id, self.serial.get(job_id, 0))
        heapq.heappush(self.events, event)

    # -- the Applier --------------------------------------------------------------------

    def admit(self, job: WaitingJob, admission: Admission, now: float) -> RunningJob:
        resumed = self.kept.pop(job.id, 0.0)
        borrowing = any(admission.borrowed.values())
        if job.id in self.open:
            self.open.discard(job.id)
            self.starts[job.id] = now
            self.ends_at_start[job.id] = (self.ends, self.guessed_ends)
            self.waits_for[job.id] = tuple(self.batch_ends)
            if borrowing:
                self.borrowing.add(job.id)
        self.serial[job.id] = self.serial.get(job.id, 0) + 1
        self._push(now + self._remaining(job.id, resumed), _END, job.id)
        return job.started(now, resumed, borrowing=borrowing)

    def preempt(self, job: RunningJob, preemption: Preemption, now: float) -> None:
        self.victims.setdefault(preemption.preemptor, []).append(job.id)
        self.failing[job.id] = preemption.fails
        if self.delay <= 0:
            self._stop(job.id, now)
        else:
            self._push(now + self.delay, _STOP, job.id)

    def fail(self, job: WaitingJob, failure: Failure, now: float) -> None:
        if job.id in self.open:
            self.open.discard(job.id)
            self.failed[job.id] = NoStart(failure.code.value, self._failure_message(job, failure))

    def _failure_message(self, job: WaitingJob, failure: Failure) -> str:
        """The failure's message, in the play's words: a play never lowers the capacity, so
        a job that does not fit needs more than there is now."""
        share = self.books.config.share(job.share)
        if failure.code is not FailureCode.NO_LONGER_FITS or share is None:
            return failure.message
        refusal = check_fits_ever(self.books.config, share, job.demand)
        if refusal is None:  # pragma: no cover - the cycle failed it for not fitting
            return failure.message
        return f"{refusal.message}; it cannot start unless that capacity is raised"
