"""A fleet's forecast as the read model shows it: predicted starts, expected ends, durations.

:func:`predict` runs :func:`~airflow_quota_provider.core.forecast.forecast` once on
the state a view was read from and turns its answer into the view's records
(:class:`~airflow_quota_provider.core.views.PredictedStart` for a waiting job,
:class:`~airflow_quota_provider.core.views.ExpectedEnd` for a running one,
:class:`~airflow_quota_provider.core.views.DurationView` for both), with the words
``status``, ``explain`` and the page show (:func:`start_text`). Both backends call it
once per read of a fleet, so every screen reads the same forecast.

Pure: times are seconds in, epoch milliseconds out; no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from airflow_quota_provider.core.durations import NO_HISTORY, DurationEstimate
from airflow_quota_provider.core.forecast import (
    RANGE_QUANTILES,
    SAMPLES,
    Draw,
    StartForecast,
    forecast,
    seeded,
)
from airflow_quota_provider.core.state import QueueState
from airflow_quota_provider.core.times import duration
from airflow_quota_provider.core.views import (
    AwaitedEnd,
    DurationView,
    ExpectedEnd,
    JobView,
    PredictedStart,
    QueueView,
)

NOW_WITHIN_SECONDS = 1.0
"""A likely start closer than this to the read is said as ``now``."""
_NONE: Mapping[str, float] = MappingProxyType({})


@dataclass(frozen=True)
class Predictions:
    """What one forecast says of every job of a fleet, by job id."""

    starts: Mapping[str, PredictedStart]
    ends: Mapping[str, ExpectedEnd]
    durations: Mapping[str, DurationView]
    basis: str

    def job(self, view: JobView) -> JobView:
        """The job's view with what the forecast says of it."""
        return replace(
            view,
            duration=self.durations.get(view.job_id),
            predicted_start=self.starts.get(view.job_id),
            expected_end=self.ends.get(view.job_id),
        )

    def queue(self, view: QueueView) -> QueueView:
        """The queue's view with every job's prediction and how they are made."""
        return replace(
            view,
            waiting=[self.job(job) for job in view.waiting],
            running=[self.job(job) for job in view.running],
            forecast_basis=self.basis,
        )


def predict(
    state: QueueState,
    now: float,
    durations: Mapping[str, DurationEstimate],
    *,
    default: DurationEstimate = NO_HISTORY,
    work_kept: Mapping[str, float] = _NONE,
    preemption_delay: float = 0.0,
) -> Predictions:
    """Forecast ``state`` at ``now`` (seconds) with each job's ``durations`` (by job id;
    ``default`` for the others) and say it as the view's records."""
    result = forecast(
        state,
        now,
        durations,
        default=default,
        work_kept=work_kept,
        preemption_delay=preemption_delay,
    )
    views: dict[str, DurationView] = {}
    ends: dict[str, ExpectedEnd] = {}
    for job in state.running():
        estimate = durations.get(job.id, default)
        views[job.id] = duration_view(estimate)
        ends[job.id] = expected_end(estimate, job.progress(now), now, job.id)
    for waiting in state.waiting():
        views[waiting.id] = duration_view(durations.get(waiting.id, default))
    starts = {job_id: predicted_start(start, now) for job_id, start in result.starts.items()}
    return Predictions(starts, ends, views, result.range_basis)


def duration_view(estimate: DurationEstimate) -> DurationView:
    return DurationView(
        estimate.likely, estimate.low, estimate.high, estimate.basis, estimate.guess
    )


def expected_end(
    estimate: DurationEstimate,
    done: float,
    now: float,
    job_id: str,
    *,
    draw: Draw | None = None,
    samples: int = SAMPLES,
) -> ExpectedEnd:
    """When a job that has done ``done`` seconds of work at ``now`` ends (epoch ms), as the
    forecast's plays end it unless it is preempted: likely, the median over the sampled
    plays (the same draws as :func:`~airflow_quota_provider.core.forecast.forecast`'s, so
    a job waiting only for it is said to start when it is said to end); the range, the
    earliest and latest over those and the 25th and 75th percentile plays."""
    left = estimate.after(done)
    draw = draw or seeded()
    drawn = sorted(left.quantile(draw(k, job_id)) for k in range(samples))
    every = [*drawn, *(left.quantile(q) for q in RANGE_QUANTILES)]

    def at(total: float) -> int:
        return _millis(now + max(0.0, total - done))

    return ExpectedEnd(at(drawn[(samples - 1) // 2]), at(min(every)), at(max(every)), left.guess)


def predicted_start(start: StartForecast, now: float) -> PredictedStart:
    no_start = start.no_start
    return PredictedStart(
        likely=None if start.likely is None else _millis(start.likely),
        earliest=None if start.earliest is None else _millis(start.earliest),
        latest=None if start.latest is None else _millis(start.latest),
        text=start_text(start, now),
        basis=start_basis(start),
        guess=start.guess,
        ends_before=start.ends_before,
        borrowing=start.borrowing,
        waits_for=[AwaitedEnd(job_id, _millis(at)) for job_id, at in start.waits_for],
        victims=list(start.victims),
        no_start_code=None if no_start is None else no_start.code,
        no_start=None if no_start is None else no_start.message,
    )


def start_text(start: StartForecast, now: float) -> str:
    """A predicted start for people: ``in about 25 min, between 10 min and 40 min``."""
    if start.likely is None:
        code = start.no_start.code if start.no_start is not None else "UNKNOWN"
        return f"not expected to start as things are ({code})"
    likely = start.likely - now
    latest = None if start.latest is None else start.latest - now
    if likely < NOW_WITHIN_SECONDS:
        text = "now"
        if latest is None:
            text += " (some plays never start it)"
        elif latest >= NOW_WITHIN_SECONDS:
            text += f", at the latest in {_span(latest)}"
    else:
        earliest = max(0.0, (start.earliest if start.earliest is not None else start.likely) - now)
        text = f"in about {duration(likely)}"
        if latest is None:
            text += f", {_span(earliest)} at the earliest (some plays never start it)"
        elif _span(earliest) != _span(latest):
            text += f", between {_span(earliest)} and {_span(latest)}"
    return text + (" (a guess)" if start.guess else "")


def start_basis(start: StartForecast) -> str:
    """What a predicted start rests on, in words."""
    if start.likely is None:
        return start.no_start.message if start.no_start is not None else ""
    if start.ends_before:
        ends = "1 job ends" if start.ends_before == 1 else f"{start.ends_before} jobs end"
        text = f"after {ends} in the forecast"
        if start.guessed_ends_before:
            text += f", {start.guessed_ends_before} of them on a guessed duration (no earlier runs)"
    else:
        text = "without waiting for a job to end"
    if start.victims:
        text += f"; preempts {', '.join(start.victims)}"
    if start.borrowing:
        text += "; borrowing"
    return text


def _span(seconds: float) -> str:
    return "now" if seconds < NOW_WITHIN_SECONDS else duration(seconds)


def _millis(seconds: float) -> int:
    return round(seconds * 1000)


def end_text(end: ExpectedEnd, now: int) -> str:
    """A running job's expected end for people, from the read at ``now`` (epoch ms):
    ``expected to end in about 2.5 h (a guess)``."""
    left = (end.likely - now) / 1000
    text = (
        "expected to end now"
        if left < NOW_WITHIN_SECONDS
        else f"expected to end in about {duration(left)}"
    )
    return text + (" (a guess)" if end.guess else "")


def at_text(moment: int, now: int) -> str:
    """A moment of the forecast said from the read at ``now`` (both epoch ms): ``in 25 min``."""
    ahead = (moment - now) / 1000
    return "now" if ahead < NOW_WITHIN_SECONDS else f"in {duration(ahead)}"
