"""How long a job will run, estimated from what is known of it: a pure value and its rules.

A :class:`DurationEstimate` is a job's total work in seconds, as a most likely
value and a range, with what it rests on in words (``basis``) and whether it
is a guess (no earlier run to go by). :func:`estimate_duration` makes one from
the durations of earlier runs of the same task (the caller decides what
"the same task" is: same DAG task, same team and size, ...), an optional upper
bound (SageMaker's ``StoppingCondition.MaxRuntimeInSeconds``, a task's
``execution_timeout``) and, for a running job, the work it has done so far.

The rules, each tested:

- **History**: the median of the earlier runs; the range is their 10th to
  90th percentile (the shortest run that many stay within). Runs of the task
  still running count for what they have run so far (Kaplan-Meier, see
  :class:`DurationHistory`). Fewer than :data:`MIN_RUNS_FOR_SPREAD` finished
  runs say little about a spread: the range is then at least half to twice the
  median, and at least the shortest to the longest run.
- **Elapsed**: a running job is known to last longer than it has run, so only
  the earlier runs that lasted longer count. When none did, the job has
  overrun every earlier run and is expected to end soon, not in the past:
  see :meth:`DurationEstimate.after`.
- **Bound**: no value exceeds ``max_runtime``; a job that has run that long
  ends now.
- **No history**: :data:`NO_HISTORY`, a stated default flagged as a guess.

Backend-neutral: nothing here knows Batch, SageMaker or Airflow.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from statistics import NormalDist

MIN_RUNS_FOR_SPREAD = 5
"""Fewer earlier runs than this: the range is widened (see the module's rules)."""
OVERRUN_LIKELY = 0.1
"""A job past its likely duration is expected to run this fraction of its elapsed time more."""
OVERRUN_HIGH = 1.0
"""... and at most this fraction more (as long again) in the high case."""
LOW_QUANTILE, HIGH_QUANTILE = 0.1, 0.9
_NORMAL = NormalDist()
_Z_HIGH = _NORMAL.inv_cdf(HIGH_QUANTILE)
_SHORTEST = 1.0
"""Seconds: the quantile model works on logarithms, so shorter values count as this."""


@dataclass(frozen=True, slots=True)
class DurationEstimate:
    """A job's total work in seconds: ``low <= likely <= high``.

    :param basis: what the estimate rests on, for people: ``median of 12 earlier runs``.
    :param guess: no earlier run to go by; the values are a stated default.
    :param max_runtime: the most the job may run (its upper bound), if known.
    :param elapsed: the work it is known to have done (it lasts at least this long).

    As a distribution (:meth:`quantile`): log-normal on each side of ``likely`` (its
    median), through ``low`` at the 10th and ``high`` at the 90th percentile, never
    below ``elapsed`` nor above ``max_runtime``.
    """

    likely: float
    low: float
    high: float
    basis: str
    guess: bool = False
    max_runtime: float | None = None
    elapsed: float = 0.0

    def __post_init__(self) -> None:
        if not 0 <= self.elapsed <= self.low <= self.likely <= self.high:
            raise ValueError(
                f"a duration estimate needs 0 <= elapsed <= low <= likely <= high, got "
                f"elapsed {self.elapsed:g}, low {self.low:g}, likely {self.likely:g}, "
                f"high {self.high:g}"
            )

    def quantile(self, q: float) -> float:
        """The duration the job stays under with probability ``q`` (0 < q < 1)."""
        z = _NORMAL.inv_cdf(q) / _Z_HIGH
        edge = self.low if z < 0 else self.high
        if z == 0 or edge == self.likely:
            value = self.likely
        elif math.isclose(abs(z), 1.0):
            value = edge
        else:
            middle = math.log(max(self.likely, _SHORTEST))
            value = math.exp(middle + abs(z) * (math.log(max(edge, _SHORTEST)) - middle))
        if self.max_runtime is not None:
            value = min(value, self.max_runtime)
        return max(value, self.elapsed)

    def capped(self, max_runtime: float | None) -> DurationEstimate:
        """The estimate with no value above ``max_runtime`` (a job stopped at its bound)."""
        if max_runtime is None:
            return self
        bound = max_runtime if self.max_runtime is None else min(max_runtime, self.max_runtime)
        if self.high <= bound:
            return replace(self, max_runtime=bound)
        return replace(
            self,
            likely=min(self.likely, bound),
            low=min(self.low, bound),
            high=bound,
            basis=f"{self.basis}; at most {bound:g} s (its max runtime)",
            max_runtime=bound,
        )

    def after(self, elapsed: float) -> DurationEstimate:
        """The estimate of a job known to have run ``elapsed`` seconds of work already.

        Values above ``elapsed`` stay. A job past its likely duration is expected to end
        soon: likely becomes ``elapsed x (1 + OVERRUN_LIKELY)``; past its high one, high
        becomes ``elapsed x (1 + OVERRUN_HIGH)``; low is at least ``elapsed``. None exceeds
        ``max_runtime``: a job that has run that long ends now."""
        if elapsed <= self.low:
            return self if elapsed <= self.elapsed else replace(self, elapsed=elapsed)
        bound = self.max_runtime
        if bound is not None and elapsed >= bound:
            basis = f"{self.basis}; has run {elapsed:g} s, its max runtime {bound:g} s: ends now"
            return replace(
                self, likely=elapsed, low=elapsed, high=elapsed, basis=basis, elapsed=elapsed
            )
        likely, high, basis = self.likely, self.high, self.basis
        if likely <= elapsed:
            likely = elapsed + elapsed * OVERRUN_LIKELY
            basis += f"; has run {elapsed:g} s, longer than that: expected to end soon"
        if high < likely:
            high = max(likely, elapsed + elapsed * OVERRUN_HIGH)
        if bound is not None and high > bound:
            likely, high = min(likely, bound), bound
            basis += f"; at most {bound:g} s (its max runtime)"
        return replace(self, likely=likely, low=elapsed, high=high, basis=basis, elapsed=elapsed)


NO_HISTORY = DurationEstimate(
    likely=3600.0,
    low=600.0,
    high=6 * 3600.0,
    basis="no earlier runs: a default of 3600 s (600 to 21600 s)",
    guess=True,
)
"""What a job with no earlier run is assumed to take: a stated guess."""


class DurationHistory:
    """What is known of a task's earlier runs: the durations of those that finished and
    the work so far of those still running (each lasts at least that long).

    Finished runs alone are biased short: at any moment the long runs of the same
    period have not finished yet. The still-running ones count as censored
    observations in a Kaplan-Meier estimate of the share of runs that last longer
    than each duration. Built once, it answers for many jobs (a forecast of a large
    fleet estimates thousands)."""

    __slots__ = ("_falls", "_survival", "_times", "running", "runs")

    def __init__(self, durations: Iterable[float], running: Iterable[float] = ()) -> None:
        self.runs: tuple[float, ...] = tuple(sorted(durations))
        self.running: tuple[float, ...] = tuple(sorted(running))
        self._times, self._survival = _kaplan_meier(self.runs, self.running)
        self._falls = [-value for value in self._survival]

    def __len__(self) -> int:
        return len(self.runs)

    def longer_than(self, elapsed: float) -> tuple[float, ...]:
        """The finished runs that lasted longer than ``elapsed``, shortest first."""
        return self.runs[bisect.bisect_right(self.runs, elapsed) :]

    def still_running_beyond(self, elapsed: float) -> int:
        """How many runs still running have run longer than ``elapsed``."""
        return len(self.running) - bisect.bisect_right(self.running, elapsed)

    def survival(self, duration: float) -> float:
        """The estimated share of runs that last longer than ``duration``."""
        index = bisect.bisect_right(self._times, duration)
        return self._survival[index - 1] if index else 1.0

    def quantile(self, q: float, elapsed: float = 0.0) -> float | None:
        """The shortest finished duration that a share ``q`` of the runs lasting longer
        than ``elapsed`` stay within; ``None`` when runs still running leave it unknown."""
        base = self.survival(elapsed)
        target = -base * (1 - q) * (1 + _TOLERANCE)
        start = bisect.bisect_right(self._times, elapsed)
        index = bisect.bisect_left(self._falls, target, lo=start)
        return self._times[index] if index < len(self._times) else None


_TOLERANCE = 1e-9
"""Products of fractions such as 5/6 x 4/5 x 3/4 are not exactly 0.5 in floats."""


def _kaplan_meier(
    runs: tuple[float, ...], running: tuple[float, ...]
) -> tuple[list[float], list[float]]:
    """Each distinct finished duration, and the share of runs lasting longer than it
    (a run still running at a duration counts as at risk there)."""
    times: list[float] = []
    survival: list[float] = []
    at_risk = len(runs) + len(running)
    share, censored = 1.0, 0
    for duration, group in itertools.groupby(runs):
        while censored < len(running) and running[censored] < duration:
            censored, at_risk = censored + 1, at_risk - 1
        ending = sum(1 for _ in group)
        share *= 1 - ending / at_risk
        at_risk -= ending
        times.append(duration)
        survival.append(share)
    return times, survival


def estimate_duration(
    history: Iterable[float] | DurationHistory,
    *,
    max_runtime: float | None = None,
    elapsed: float = 0.0,
    default: DurationEstimate = NO_HISTORY,
) -> DurationEstimate:
    """A job's total work estimated from what is known of earlier runs of the same task
    (durations, or a :class:`DurationHistory` that also knows the runs still running), its
    upper bound ``max_runtime`` and the work it has done so far (``elapsed``, for a
    running job); ``default`` when no earlier run has finished (a guess)."""
    runs = history if isinstance(history, DurationHistory) else DurationHistory(history)
    if not runs.runs:
        return default.capped(max_runtime).after(elapsed)
    longer = runs.longer_than(elapsed) if elapsed > 0 else runs.runs
    if not longer:
        what = f"{_runs(runs, 0.0)}, all shorter than it has run"
        whole = _from_history(runs, runs.runs, 0.0, what)
        return whole.capped(max_runtime).after(elapsed)
    if len(longer) == len(runs):
        what = _runs(runs, elapsed)
    else:
        what = f"the {len(longer)} of {len(runs)} earlier runs that lasted over {elapsed:g} s"
        if runs.still_running_beyond(elapsed):
            what += f" and {runs.still_running_beyond(elapsed)} still running"
    return _from_history(runs, longer, elapsed, what).capped(max_runtime).after(elapsed)


def _runs(runs: DurationHistory, elapsed: float) -> str:
    text = "1 earlier run" if len(runs) == 1 else f"{len(runs)} earlier runs"
    running = runs.still_running_beyond(elapsed)
    return f"{text} and {running} still running" if running else text


def _from_history(
    runs: DurationHistory, longer: tuple[float, ...], elapsed: float, what: str
) -> DurationEstimate:
    """Median and 10th-90th percentile of the runs lasting longer than ``elapsed``
    (``longer``: those that finished), widened when few finished; a percentile that runs
    still running leave unknown is the longest run known (finished or not)."""
    longest = max(longer[-1], runs.running[-1] if runs.running else 0.0)
    low, likely, high = (
        longest if (value := runs.quantile(q, elapsed)) is None else value
        for q in (LOW_QUANTILE, 0.5, HIGH_QUANTILE)
    )
    spread = "10th to 90th percentile"
    if len(longer) < MIN_RUNS_FOR_SPREAD:
        low, high = min(longer[0], likely / 2), max(longest, likely * 2)
        spread = "half to twice the median, too few runs for percentiles"
    return DurationEstimate(likely, low, high, f"median of {what} (range: {spread})")
