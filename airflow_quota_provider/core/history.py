"""Who used what, over time: a fleet's usage history as changes, with its preemptions and starts.

The history is a step function per *key*, a share and a unit (or the fleet, share
``None``, and a unit): a :class:`Change` at ``at`` gives the key's :class:`Figures`
from then until the key's next change. A snapshot of the fleet (:func:`figures_of`)
is compared with the one before (:func:`changes`), and only keys whose figures
differ make a record, so a fleet that cycles every few seconds without anything
happening records nothing. Before a key's first change its figures are all zero.

The figures of a share and unit, in instances, are those of
:func:`~airflow_quota_provider.core.occupancy.occupancy` (one rule for who lends
to whom, the one the page's bars and ``status`` show):

- ``own_use = min(used, owned)``, ``borrowed = max(0, used - owned)``;
- ``lent``: what all shares borrow comes first out of capacity no share owns,
  then out of the idle owned capacity of the lending shares (LEND and
  LEND_AND_BORROW; RESERVE never lends), in proportion to how much each leaves
  idle, rounded to whole instances by largest remainder, then by share order.
  So while no capacity is unowned, the shares' ``lent`` add up to their
  ``borrowed``;
- ``idle = owned - own_use - lent``;
- ``waiting`` and ``waiting_jobs``: instances of the unit the share's waiting jobs
  ask for, and how many of its waiting jobs ask for the unit.

The fleet's figures per unit: ``owned`` is the queue's capacity, ``own_use`` what
runs within it and ``borrowed`` what runs beyond it (only after the capacity was
lowered below what runs), ``lent`` 0, ``idle`` the rest; ``waiting`` and
``waiting_jobs`` are every share's.

Events are kept as they happened: a :class:`PreemptionRecord` when a preempted
attempt stopped, a :class:`JobStart` at every start of an attempt. A job requeued
after a preemption waits again; :func:`~airflow_quota_provider.core.showback.job_waits`
sums its waits.

Times are epoch milliseconds (ints), as in :mod:`~airflow_quota_provider.core.views`,
so integrals in instance-milliseconds are whole numbers and downsampling
(:mod:`~airflow_quota_provider.core.retention`) can preserve them exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from airflow_quota_provider.core.jobs import RunningJob, WaitingJob
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.occupancy import occupancy
from airflow_quota_provider.core.state import QueueState

Key = tuple[str | None, str]
"""``(share, unit)``; share ``None`` for the fleet's own figures."""


@dataclass(frozen=True, slots=True)
class Figures:
    """One key's figures: instances at an instant (a :class:`Change`), or their integral
    in instance-milliseconds over an interval (a :class:`Bucket`)."""

    owned: int = 0
    own_use: int = 0
    borrowed: int = 0
    lent: int = 0
    idle: int = 0
    waiting: int = 0
    waiting_jobs: int = 0

    @property
    def used(self) -> int:
        return self.own_use + self.borrowed

    def values(self) -> tuple[int, ...]:
        return (
            self.owned,
            self.own_use,
            self.borrowed,
            self.lent,
            self.idle,
            self.waiting,
            self.waiting_jobs,
        )


NAMES = tuple(Figures.__dataclass_fields__)
"""The figures' names, in the order of :meth:`Figures.values`."""
ZERO = Figures()


@dataclass(frozen=True, slots=True)
class Change:
    """From ``at`` on (until the key's next change), ``share``/``unit`` has ``figures``."""

    at: int
    share: str | None
    unit: str
    figures: Figures

    @property
    def key(self) -> Key:
        return (self.share, self.unit)


@dataclass(frozen=True, slots=True)
class Bucket:
    """Downsampled history of one key over ``[start, end)``: ``totals`` are the integrals
    of its figures in instance-milliseconds, spread evenly over the bucket (its average
    held throughout)."""

    start: int
    end: int
    share: str | None
    unit: str
    totals: Figures

    @property
    def key(self) -> Key:
        return (self.share, self.unit)


@dataclass(frozen=True, slots=True)
class PreemptionRecord:
    """A preempted attempt, recorded when it stopped (``at``).

    :param kind: the core's :class:`~airflow_quota_provider.core.reasons.PreemptionKind`
        value (``RECLAIM``, ``IN_SHARE``, ``CAPACITY_REDUCED``).
    :param demand: instances per unit the victim held.
    :param preemptor: the job it was stopped for, and that job's share (``None`` when
        not known, e.g. AWS's own reasons name none).
    :param seconds_lost: seconds of work since its last checkpoint (or since it started
        when it does not checkpoint): :meth:`lost` multiplies them by its instances.
    """

    at: int
    kind: str
    share: str
    job_id: str
    demand: Mapping[str, int]
    preemptor_share: str | None
    preemptor: str | None
    seconds_lost: float

    def lost(self, unit: str) -> float:
        """Instance-seconds of ``unit`` lost."""
        return self.seconds_lost * self.demand.get(unit, 0)


@dataclass(frozen=True, slots=True)
class JobStart:
    """An attempt of a job started at ``at`` after waiting since ``queued_since`` (its
    submission for the first attempt, the stop of its preemption for later ones)."""

    at: int
    share: str
    job_id: str
    demand: Mapping[str, int]
    attempt: int
    queued_since: int

    @property
    def wait(self) -> int:
        """Milliseconds this attempt waited."""
        return self.at - self.queued_since


@dataclass(frozen=True)
class History:
    """A fleet's history, known until ``end``: downsampled ``buckets`` (older), then
    ``changes`` (each key's figures from its first change on), both in time order, and
    the events."""

    end: int
    changes: tuple[Change, ...] = ()
    buckets: tuple[Bucket, ...] = ()
    preemptions: tuple[PreemptionRecord, ...] = ()
    starts: tuple[JobStart, ...] = ()


def figures_of(
    config: QueueConfig,
    usage: Mapping[str, Mapping[str, int]],
    waiting: Iterable[tuple[str, Mapping[str, int]]] = (),
) -> dict[Key, Figures]:
    """Every key's figures for ``usage`` (instances per share and unit that run) and the
    ``waiting`` jobs (``(share, demand)`` each)."""
    asked: dict[Key, list[int]] = {}
    for share, demand in waiting:
        for unit, count in demand.items():
            wait = asked.get((share, unit))
            if wait is None:
                asked[(share, unit)] = [count, 1]
            else:
                wait[0] += count
                wait[1] += 1
    for (_, unit), (count, jobs) in list(asked.items()):
        fleet = asked.setdefault((None, unit), [0, 0])
        fleet[0] += count
        fleet[1] += jobs
    result: dict[Key, Figures] = {}
    for share, units in occupancy(config, usage).items():
        for unit, held in units.items():
            wait = asked.get((share, unit), [0, 0])
            result[(share, unit)] = Figures(
                held.owned, held.own_use, held.borrowed, held.lent, held.idle, wait[0], wait[1]
            )
    for unit in config.units:
        capacity = config.capacity.get(unit, 0)
        used = sum(units.get(unit, 0) for units in usage.values())
        within = min(used, capacity)
        wait = asked.get((None, unit), [0, 0])
        result[(None, unit)] = Figures(
            capacity, within, used - within, 0, capacity - within, wait[0], wait[1]
        )
    return result


def state_figures(state: QueueState) -> dict[Key, Figures]:
    """:func:`figures_of` a queue's state: its running and waiting jobs."""
    waiting = ((job.share, job.demand) for job in state.waiting())
    return figures_of(state.config, state.usage_by_share(), waiting)


def changes(before: Mapping[Key, Figures], after: Mapping[Key, Figures], at: int) -> list[Change]:
    """The changes that take ``before`` to ``after`` at ``at``; a key gone from ``after``
    (a share or unit removed) changes to zero."""
    result = [
        Change(at, key[0], key[1], figures)
        for key, figures in after.items()
        if before.get(key, ZERO) != figures
    ]
    result.extend(
        Change(at, key[0], key[1], ZERO)
        for key, figures in before.items()
        if key not in after and figures != ZERO
    )
    return result


def preemption_record(
    at: int,
    victim: RunningJob,
    kind: str,
    preemptor: WaitingJob | None,
    seconds_lost: float,
) -> PreemptionRecord:
    """The record of ``victim``'s attempt stopped at ``at`` for ``preemptor``."""
    return PreemptionRecord(
        at=at,
        kind=kind,
        share=victim.share,
        job_id=victim.id,
        demand=dict(victim.demand),
        preemptor_share=None if preemptor is None else preemptor.share,
        preemptor=None if preemptor is None else preemptor.id,
        seconds_lost=seconds_lost,
    )


class Recorder:
    """Keeps a fleet's history as a caller observes it (the pool manager each cycle, a
    replay each time its clock moves): figures are compared with the last observed
    ones and only changes are kept; events are kept as told."""

    def __init__(self, last: Mapping[Key, Figures] | None = None) -> None:
        """:param last: the figures last recorded (e.g. read back from a database), so a
        restarted recorder does not record them again."""
        self._last: dict[Key, Figures] = dict(last or {})
        self._changes: list[Change] = []
        self._preemptions: list[PreemptionRecord] = []
        self._starts: list[JobStart] = []
        self._end = 0

    def observe(self, at: int, figures: Mapping[Key, Figures]) -> list[Change]:
        """Record the fleet's figures at ``at`` (not before the last observation); return
        the changes it made."""
        if at < self._end:
            raise ValueError(f"observed at {at}, before the last observation at {self._end}")
        made = changes(self._last, figures, at)
        for change in made:
            if change.figures == ZERO:
                self._last.pop(change.key, None)
            else:
                self._last[change.key] = change.figures
        self._changes.extend(made)
        self._end = at
        return made

    def preempted(self, record: PreemptionRecord) -> None:
        self._preemptions.append(record)

    def started(self, record: JobStart) -> None:
        self._starts.append(record)

    def history(self, end: int | None = None) -> History:
        """What was recorded, known until ``end`` (by default the last observation)."""
        return History(
            end=self._end if end is None else max(end, self._end),
            changes=tuple(self._changes),
            preemptions=tuple(sorted(self._preemptions, key=lambda p: p.at)),
            starts=tuple(sorted(self._starts, key=lambda s: s.at)),
        )


Integrals = list[float]
"""Integrals of a key's figures in instance-milliseconds, in :data:`NAMES` order: whole
numbers (ints) wherever the window does not cut a :class:`Bucket`."""


def integrate(history: History, since: int, until: int) -> dict[Key, Integrals]:
    """Every key's integrals over ``[since, until)`` (cut at ``history.end``)."""
    if until <= since:
        return {}
    return series(history, since, until, until - since)[0]


def series(history: History, since: int, until: int, step: int) -> list[dict[Key, Integrals]]:
    """Every key's integrals over each ``step`` of ``[since, until)``, the last one shorter
    when ``step`` does not divide the window; a bucket cut by a step counts pro rata."""
    cells = _Cells(since, min(until, history.end), step, until)
    for bucket in history.buckets:
        cells.add(
            bucket.key, bucket.start, bucket.end, bucket.totals.values(), bucket.end - bucket.start
        )
    held: dict[Key, Change] = {}
    for change in history.changes:
        if change.at >= until:
            break
        key = (change.share, change.unit)
        before = held.get(key)
        if before is not None and change.at > since:
            cells.add(key, before.at, change.at, before.figures.values(), 0)
        held[key] = change
    for key, change in held.items():
        cells.add(key, change.at, until, change.figures.values(), 0)
    return cells.sums


class _Cells:
    """Integrals per ``step`` from ``since``, of what is known before ``end``; ``until``
    (the window's end) sets how many steps there are."""

    def __init__(self, since: int, end: int, step: int, until: int) -> None:
        self.since, self.end, self.step = since, end, step
        self.sums: list[dict[Key, Integrals]] = [
            {} for _ in range(max(0, -(-(until - since) // step)))
        ]

    def add(self, key: Key, start: int, end: int, values: tuple[int, ...], length: int) -> None:
        """A bucket's totals over ``length``, or figures held (``length`` 0), in ``[start, end)``
        (clipped to the window)."""
        start, end = max(start, self.since), min(end, self.end)
        index = (start - self.since) // self.step
        while start < end:
            stop = min(end, self.since + (index + 1) * self.step)
            span = stop - start
            sums = self.sums[index].get(key)
            if sums is None:
                sums = self.sums[index][key] = [0] * len(NAMES)
            for at, value in enumerate(values):
                if value:
                    sums[at] += _part(value, span, length) if length else value * span
            start, index = stop, index + 1


def _part(value: int, span: int, length: int) -> float:
    """The integral over ``span`` of a bucket's total ``value`` over ``length``, spread
    evenly: exact (an int) when it divides."""
    whole, rest = divmod(value * span, length)
    return whole if not rest else value * span / length
