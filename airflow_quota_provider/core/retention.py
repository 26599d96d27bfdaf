"""How long a usage history is kept, and how finely: by default the changes of the last
7 days as they are, then averages over 5 minutes until 14 days, then over an hour
until 400 days; older data is dropped.

:func:`downsample` turns the changes older than ``Retention.changes`` into
:class:`~airflow_quota_provider.core.history.Bucket` records on a grid of
``fine_step`` (aligned to the epoch), buckets older than ``Retention.fine`` into
buckets of ``coarse_step``, and drops what is older than ``Retention.keep``
(events included: they are kept as they happened until then, since a wait
percentile cannot be rebuilt from averages). Each bucket holds the integrals of
its key's figures, and consecutive buckets of a key with the same average are one
bucket, so a share whose figures hold for a week is one row, not 2,016.

**Integrals are preserved exactly**: over any window aligned to the grid of the
data it covers (fine steps where fine buckets are, coarse steps where coarse
ones are), :func:`~airflow_quota_provider.core.history.integrate` gives the same
whole numbers of instance-milliseconds before and after downsampling, however
often it runs. Changes are in whole milliseconds and grid steps are whole
multiples of each other, so every split is a whole number.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from airflow_quota_provider.core.history import (
    NAMES,
    ZERO,
    Bucket,
    Change,
    Figures,
    History,
    Key,
)

DAY = 86_400.0

Piece = tuple[int, int, tuple[int, ...]]
"""``(start, end, totals)``: integrals in instance-milliseconds spread evenly over
``[start, end)``."""


@dataclass(frozen=True)
class Retention:
    """How long each resolution of a history is kept, in seconds.

    :param changes: every change is kept this long.
    :param fine: then averages over ``fine_step`` until this age. A busy fleet changes
        about every minute, so its 5-minute buckets are about as many as its changes
        (``benchmarks/history_size.py``): the hourly ones are what saves room.
    :param keep: then averages over ``coarse_step`` until this age; older data and
        events are dropped.
    :param fine_step: must divide ``coarse_step``.
    """

    changes: float = 7 * DAY
    fine: float = 14 * DAY
    keep: float = 400 * DAY
    fine_step: float = 300.0
    coarse_step: float = 3600.0

    def __post_init__(self) -> None:
        fine, coarse = _millis(self.fine_step), _millis(self.coarse_step)
        if fine <= 0 or coarse % fine:
            raise ValueError(
                f"fine_step ({self.fine_step} s) must be positive and divide "
                f"coarse_step ({self.coarse_step} s)"
            )
        if not 0 <= self.changes <= self.fine <= self.keep:
            raise ValueError(
                f"retention must grow: changes ({self.changes} s) <= fine ({self.fine} s) "
                f"<= keep ({self.keep} s)"
            )


def downsample(history: History, now: int, retention: Retention) -> History:
    """``history`` as ``retention`` keeps it at ``now`` (epoch milliseconds)."""
    fine, coarse = _millis(retention.fine_step), _millis(retention.coarse_step)
    keep_from = kept_from(now, retention)
    if history.end <= keep_from:
        return History(end=history.end)
    cut = changes_from(history.end, now, retention)
    coarse_until = min(_floor(now - _millis(retention.fine), coarse), _floor(cut, coarse))
    first = bisect.bisect_left(history.changes, cut, key=lambda change: change.at)
    pieces, opening = _pieces(history.changes[:first], cut)
    kept = [bucket for bucket in history.buckets if bucket.end > cut]
    for bucket in history.buckets:
        if bucket.end <= cut:
            pieces.setdefault(bucket.key, []).append(
                (bucket.start, bucket.end, bucket.totals.values())
            )
    recent = history.changes[first:]
    at_cut = {change.key for change in recent if change.at == cut}
    buckets: list[Bucket] = []
    for key, parts in pieces.items():
        older = _clip(parts, keep_from, coarse_until)
        newer = _clip(parts, coarse_until, cut)
        runs = [*_cells(older, coarse), *_cells(newer, fine)]
        buckets.extend(Bucket(a, b, key[0], key[1], Figures(*t)) for a, b, t in _merged(runs))
    buckets.extend(kept)
    buckets.sort(key=lambda bucket: (bucket.start, bucket.share or "", bucket.unit))
    return History(
        end=history.end,
        changes=(*(c for c in opening if c.key not in at_cut), *recent),
        buckets=tuple(buckets),
        preemptions=tuple(p for p in history.preemptions if p.at >= keep_from),
        starts=tuple(s for s in history.starts if s.at >= keep_from),
    )


def kept_from(now: int, retention: Retention) -> int:
    """The moment before which :func:`downsample` drops everything, events included."""
    return _floor(now - _millis(retention.keep), _millis(retention.coarse_step))


def changes_from(end: int, now: int, retention: Retention) -> int:
    """The moment from which :func:`downsample` keeps a history known until ``end`` as its
    changes (those before become buckets): a database that keeps the history reads only
    what is older to downsample it."""
    fine = _millis(retention.fine_step)
    return min(_floor(now - _millis(retention.changes), fine), _floor(end, fine))


def for_days(days: float) -> Retention:
    """The default retention kept ``days`` days in all (``--history-days``): changes and
    5-minute averages for as long as that allows, hourly ones after."""
    if not days > 0:
        raise ValueError(f"history_days must be a positive number of days, got {days}")
    default = Retention()
    keep = days * DAY
    return Retention(changes=min(default.changes, keep), fine=min(default.fine, keep), keep=keep)


def _pieces(changes: Iterable[Change], cut: int) -> tuple[dict[Key, list[Piece]], list[Change]]:
    """Each key's step function before ``cut`` as pieces, and the changes that open the
    part kept as it is at ``cut`` (each key's figures then)."""
    pieces: dict[Key, list[Piece]] = {}
    held: dict[Key, Change] = {}

    def close(change: Change, end: int) -> None:
        if change.figures != ZERO and end > change.at:
            totals = tuple(v * (end - change.at) for v in change.figures.values())
            pieces.setdefault(change.key, []).append((change.at, end, totals))

    for change in changes:
        before = held.get(change.key)
        if before is not None:
            close(before, change.at)
        held[change.key] = change
    for change in held.values():
        close(change, cut)
    opening = [
        Change(cut, change.share, change.unit, change.figures)
        for change in held.values()
        if change.figures != ZERO
    ]
    return pieces, opening


def _clip(pieces: Iterable[Piece], start: int, end: int) -> list[Piece]:
    """The parts of ``pieces`` within ``[start, end)``."""
    result = []
    for a, b, totals in pieces:
        lo, hi = max(a, start), min(b, end)
        if lo < hi:
            result.append((lo, hi, _part(totals, hi - lo, b - a)))
    return result


def _cells(pieces: Iterable[Piece], step: int) -> list[Piece]:
    """``pieces`` on a grid of ``step``: each cell's integrals, as whole-cell runs where a
    piece covers cells whole and summed where pieces cover a cell in part."""
    runs: list[Piece] = []
    partial: dict[int, list[int]] = {}
    for start, end, totals in pieces:
        inner = (p for p in (_ceil(start, step), _floor(end, step)) if start < p < end)
        for a, b in pairwise(sorted({start, end, *inner})):
            part = _part(totals, b - a, end - start)
            if a % step == 0 and b % step == 0:
                runs.append((a, b, part))
            else:
                sums = partial.setdefault(_floor(a, step), [0] * len(NAMES))
                for index, value in enumerate(part):
                    sums[index] += value
    runs.extend((cell, cell + step, tuple(sums)) for cell, sums in partial.items())
    return runs


def _merged(runs: list[Piece]) -> list[Piece]:
    """Runs in time order, consecutive ones with the same average joined, empty ones left out."""
    result: list[Piece] = []
    for start, end, totals in sorted(runs):
        if not any(totals):
            continue
        if result:
            a, b, last = result[-1]
            if b == start and all(
                x * (end - start) == y * (b - a) for x, y in zip(last, totals, strict=True)
            ):
                result[-1] = (a, end, tuple(x + y for x, y in zip(last, totals, strict=True)))
                continue
        result.append((start, end, totals))
    return result


def _part(totals: tuple[int, ...], span: int, length: int) -> tuple[int, ...]:
    """``span`` of ``length`` of evenly spread totals: whole by construction (a run's totals
    are whole per grid step, a change's per millisecond)."""
    return tuple(value * span // length for value in totals)


def _millis(seconds: float) -> int:
    return round(seconds * 1000)


def _floor(at: int, step: int) -> int:
    return at - at % step


def _ceil(at: int, step: int) -> int:
    return -(-at // step) * step
