"""How good the start forecast is: the Helios month replayed, forecasts against real starts.

Run: ``.venv/bin/python benchmarks/forecast_accuracy.py [--loads 1.0,1.2,1.4] [--sample N]
[--true-durations]``

The Helios Earth month (``benchmarks/trace_replay.py``'s config: every team a
LEND_AND_BORROW share owning its recorded quota, no borrow limit) replayed
under the ``aws`` policy with a 60 s preemption delay and an 1800 s
checkpoint interval, at each load:

1. **The real starts**: one replay, as ``simulate`` runs it.
2. **The forecasts**: the same replay again (it is deterministic) with an
   observer that, at every instant where a submitted job is left waiting (or
   ``--sample N`` of them, drawn at random with a fixed seed), forecasts
   with the defaults of :func:`forecast` from the state at that instant. Every
   running and waiting job's duration is estimated only from what was known
   then (:func:`estimate_duration`): the jobs of the same team and size that
   had finished and the work so far of those running (else the same team's,
   else the default guess); a running job's own work so far; no upper bound
   (Helios has none). Also the work each preempted job kept and the replay's
   preemption delay. The start forecast of each job submitted at that instant
   and left waiting is compared with its real first start.
3. **The naive baseline** at the same instant: the job's place in its team's
   queue times the mean duration of the team's finished jobs, over the number
   of jobs the team runs: ``start = now + (place + 1) x mean / max(1, running)``
   (the range: the team's 10th and 90th percentile duration for the mean).

Per load: median and p90 absolute error of the likely start for jobs that
waited, the share of them whose real start is inside the forecast range
(earliest..latest), the median width of that range, the same for the baseline.
``--true-durations`` forecasts a second time at each instant with every job's
real duration as its estimate (no spread): what is left is the error of
what a forecast cannot know, the jobs submitted later.

Exits 1 when the forecast misses a bound of ``bounds.yaml``
(``forecast_accuracy_*``) at a load where jobs waited.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from bounds import bound
from trace_replay import CHECKPOINT, DELAY, TRACE_DIR, helios_config

from airflow_quota_provider.core.config import parse_config
from airflow_quota_provider.core.durations import (
    NO_HISTORY,
    DurationEstimate,
    DurationHistory,
    estimate_duration,
)
from airflow_quota_provider.core.forecast import Forecast, StartForecast, forecast
from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.core.state import QueueState
from airflow_quota_provider.simulation.policies import Policy, policy_config
from airflow_quota_provider.simulation.scenario import JobSpec, Scenario
from airflow_quota_provider.simulation.simulator import Result, SimJob, Simulator
from airflow_quota_provider.simulation.traces import Trace, TraceFormat, read_trace

LOADS = (1.0, 1.2, 1.4)
SEED = 24


@dataclass(frozen=True)
class Prediction:
    likely: float
    earliest: float
    latest: float

    def error(self, real: float) -> float:
        return abs(self.likely - real)

    def covers(self, real: float) -> bool:
        return self.earliest <= real <= self.latest

    @property
    def width(self) -> float:
        return self.latest - self.earliest


@dataclass
class Outcome:
    """One forecast job: its real start, the forecast's and the baseline's."""

    job_id: str
    submitted: float
    real: float
    forecast: Prediction | None
    baseline: Prediction
    guess: bool
    true_durations: Prediction | None = None


class Histories:
    """What is known of earlier runs at a moment, per team and size and per team: the
    durations of the jobs finished by then and the work so far of those running."""

    def __init__(self, result: Result) -> None:
        finished = [
            (job.finished, job.spec)
            for job in result.jobs.values()
            if job.status == "SUCCEEDED" and job.finished is not None
        ]
        finished.sort(key=lambda pair: pair[0])
        self.finished = finished
        self.next = 0
        self.runs: dict[object, list[float]] = {}
        self.running: dict[object, list[float]] = {}
        self.kept: dict[object, DurationHistory] = {}

    def at(self, now: float, state: QueueState, jobs: Mapping[str, SimJob]) -> None:
        """Learn every job that finished at or before ``now`` and what runs then."""
        while self.next < len(self.finished) and self.finished[self.next][0] <= now:
            spec = self.finished[self.next][1]
            self.runs.setdefault(_size(spec), []).append(spec.duration)
            self.runs.setdefault(spec.share, []).append(spec.duration)
            self.next += 1
        self.running = {}
        for job in state.running():
            spec = jobs[job.id].spec
            self.running.setdefault(_size(spec), []).append(job.progress(now))
            self.running.setdefault(spec.share, []).append(job.progress(now))
        self.kept = {}

    def _history(self, key: object) -> DurationHistory:
        history = self.kept.get(key)
        if history is None:
            history = DurationHistory(self.runs.get(key, ()), self.running.get(key, ()))
            self.kept[key] = history
        return history

    def estimate(self, spec: JobSpec, elapsed: float) -> DurationEstimate:
        """From the team's jobs of the same size, else the team's, else the default."""
        if self.runs.get(_size(spec)):
            history, what = self._history(_size(spec)), "same team and size"
        elif self.runs.get(spec.share):
            history, what = self._history(spec.share), "same team, any size"
        else:
            return estimate_duration((), elapsed=elapsed)
        estimate = estimate_duration(history, elapsed=elapsed)
        return replace(estimate, basis=f"{what}: {estimate.basis}")

    def team(self, team: str) -> tuple[float, float, float]:
        """The baseline's figures: the team's finished jobs' 10th percentile, mean and 90th
        percentile duration (the jobs still running left out: the baseline is naive)."""
        runs = self.runs.get(team, [])
        if not runs:
            return NO_HISTORY.low, NO_HISTORY.likely, NO_HISTORY.high
        spread = estimate_duration(runs)
        return spread.low, statistics.fmean(runs), spread.high


def _size(spec: JobSpec) -> tuple[str, int]:
    return spec.share, sum(spec.demand.values())


@dataclass
class Forecaster:
    """The replay's observer: forecasts at the chosen instants."""

    jobs: Mapping[str, SimJob]
    histories: Histories
    instants: set[float]
    submitted_at: Mapping[float, list[str]]
    real: Mapping[str, float]
    true_durations: bool = False
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def elapse(
        self, start: float, end: float, state: QueueState, pending: Mapping[str, Mapping[str, int]]
    ) -> None:
        if start not in self.instants:
            return
        self.histories.at(start, state, self.jobs)
        clock = time.perf_counter()
        estimates, kept = self._estimates(state, start)
        result = forecast(state, start, estimates, work_kept=kept, preemption_delay=DELAY)
        self.seconds.append(time.perf_counter() - clock)
        known = self._with_true_durations(state, start, kept) if self.true_durations else None
        for job_id in self.submitted_at[start]:
            if state.waiting_job(job_id) is None:
                continue
            predicted = result.starts[job_id]
            self.outcomes.append(
                Outcome(
                    job_id,
                    start,
                    self.real[job_id],
                    _prediction(predicted),
                    self._baseline(state, job_id, start),
                    predicted.guess,
                    None if known is None else _prediction(known.starts[job_id]),
                )
            )

    def _estimates(
        self, state: QueueState, now: float
    ) -> tuple[dict[str, DurationEstimate], dict[str, float]]:
        estimates: dict[str, DurationEstimate] = {}
        kept: dict[str, float] = {}
        for running in state.running():
            spec = self.jobs[running.id].spec
            estimates[running.id] = self.histories.estimate(spec, running.progress(now))
        for waiting in state.waiting():
            job = self.jobs[waiting.id]
            if job.work_done:
                kept[waiting.id] = job.work_done
            estimates[waiting.id] = self.histories.estimate(job.spec, job.work_done)
        return estimates, kept

    def _with_true_durations(
        self, state: QueueState, now: float, kept: Mapping[str, float]
    ) -> Forecast:
        ids = [job.id for job in state.running()] + [job.id for job in state.waiting()]
        real = {
            job_id: DurationEstimate(d, d, d, "the real duration")
            for job_id in ids
            if (d := self.jobs[job_id].spec.duration)
        }
        return forecast(state, now, real, work_kept=kept, preemption_delay=DELAY)

    def _baseline(self, state: QueueState, job_id: str, now: float) -> Prediction:
        job = state.waiting_job(job_id)
        assert job is not None
        place = state.queue(job.share).index(job.order_key)
        running = max(1, sum(1 for _ in state.running_of(job.share)))
        low, mean, high = self.histories.team(job.share)
        return Prediction(
            *(now + (place + 1) * duration / running for duration in (mean, low, high))
        )


def _prediction(start: StartForecast) -> Prediction | None:
    if start.likely is None or start.earliest is None:
        return None
    latest = float("inf") if start.latest is None else start.latest
    return Prediction(start.likely, start.earliest, latest)


def _simulator(config: QueueConfig, trace: Trace, load: float) -> Simulator:
    jobs = trace.at_load(load).with_checkpoints(CHECKPOINT).jobs
    scenario = Scenario(policy_config(config, Policy.AWS), jobs, (), DELAY)
    return Simulator(scenario, record_timeline=False)


@dataclass
class LoadResult:
    load: float
    waited: int
    instants: int
    sampled: int
    outcomes: list[Outcome]
    forecast_seconds: list[float]
    wall: float


def measure(
    config: QueueConfig, trace: Trace, load: float, sample: int | None, true_durations: bool
) -> LoadResult:
    start = time.perf_counter()
    first = _simulator(config, trace, load).run()
    real = {job_id: job.attempts[0].start for job_id, job in first.jobs.items() if job.attempts}
    waited = [job_id for job_id, begun in real.items() if begun > first.jobs[job_id].spec.submit]
    submitted_at: dict[float, list[str]] = {}
    for job_id, job in first.jobs.items():
        submitted_at.setdefault(job.spec.submit, []).append(job_id)
    chosen = sorted({first.jobs[job_id].spec.submit for job_id in waited})
    instants = len(chosen)
    if sample is not None and len(chosen) > sample:
        chosen = sorted(random.Random(SEED).sample(chosen, sample))
    simulator = _simulator(config, trace, load)
    observer = Forecaster(
        simulator.jobs, Histories(first), set(chosen), submitted_at, real, true_durations
    )
    simulator.observer = observer
    second = simulator.run()
    assert all(
        job.attempts[0].start == real[job_id] for job_id, job in second.jobs.items() if job.attempts
    ), "the second replay differs from the first"
    return LoadResult(
        load,
        len(waited),
        instants,
        len(chosen),
        observer.outcomes,
        observer.seconds,
        time.perf_counter() - start,
    )


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def figures(outcomes: list[Outcome], pick: str) -> tuple[float, float, float, float, int]:
    """Median and p90 absolute error (minutes), share inside the range, median range
    width (minutes), and how many had no prediction."""
    pairs = [(o.real, getattr(o, pick)) for o in outcomes]
    known = [(real, p) for real, p in pairs if p is not None]
    errors = [p.error(real) / 60 for real, p in known]
    widths = [p.width / 60 for _, p in known]
    inside = sum(1 for real, p in known if p.covers(real)) / len(pairs)
    return (
        statistics.median(errors),
        quantile(errors, 0.9),
        inside,
        statistics.median(widths),
        len(pairs) - len(known),
    )


HEADER = (
    "| load | jobs that waited | forecast at | real wait p50 / p90 | "
    "**forecast** error p50 / p90 | inside range | range width p50 | "
    "baseline error p50 / p90 | inside range | range width p50 | "
    "true durations: error p50 / p90, inside | forecast s p50 / max | wall s |\n"
    "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)
"""Times in minutes; the forecast's own time (with the estimates) in seconds; wall: the
two replays and the forecasts."""


def _errors(outcomes: list[Outcome], pick: str) -> tuple[str, str, str]:
    p50, p90, inside, width, _ = figures(outcomes, pick)
    return f"{p50:,.0f} / {p90:,.0f}", f"{inside:.0%}", f"{width:,.0f}"


def row(result: LoadResult) -> str:
    outcomes = result.outcomes
    if not outcomes:
        return (
            f"| {result.load:g} | 0 | - | - | - | - | - | - | - | - | - | - | {result.wall:.0f} |"
        )
    waits = [(o.real - o.submitted) / 60 for o in outcomes]
    where = (
        f"all {result.instants:,} instants"
        if result.sampled == result.instants
        else f"{result.sampled:,} of {result.instants:,} instants"
    )
    f_error, f_in, f_width = _errors(outcomes, "forecast")
    b_error, b_in, b_width = _errors(outcomes, "baseline")
    known = "-"
    if outcomes[0].true_durations is not None:
        t_error, t_in, _ = _errors(outcomes, "true_durations")
        known = f"{t_error}, {t_in}"
    seconds = result.forecast_seconds
    return (
        f"| {result.load:g} | {result.waited:,} | {where} ({len(outcomes):,} jobs) | "
        f"{statistics.median(waits):,.0f} / {quantile(waits, 0.9):,.0f} | "
        f"**{f_error}** | **{f_in}** | {f_width} | {b_error} | {b_in} | {b_width} | {known} | "
        f"{statistics.median(seconds):.2f} / {max(seconds):.2f} | {result.wall:.0f} |"
    )


def check(result: LoadResult) -> bool:
    """The forecast against the bounds of bounds.yaml at one load."""
    f50, f90, f_in, _, _ = figures(result.outcomes, "forecast")
    b50, b90, _, _, _ = figures(result.outcomes, "baseline")
    measured = {
        "forecast_accuracy_median_error_vs_baseline": f50 / b50,
        "forecast_accuracy_p90_error_vs_baseline": f90 / b90,
        "forecast_accuracy_outside_range_fraction": 1 - f_in,
    }
    ok = True
    for name, value in measured.items():
        limit = bound(name)
        ok &= value <= limit
        verdict = "within" if value <= limit else "OVER"
        print(f"load {result.load:g}: {name} {value:.2f}, {verdict} the bound {limit:g}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", default=",".join(f"{load:g}" for load in LOADS))
    parser.add_argument("--sample", type=int, help="instants per load (default: every one)")
    parser.add_argument(
        "--true-durations", action="store_true", help="also forecast with the real durations"
    )
    args = parser.parse_args()
    config = parse_config(helios_config(TRACE_DIR))
    trace = read_trace(TRACE_DIR / "jobs.csv", TraceFormat.HELIOS)
    print(f"python {sys.version.split()[0]}, {len(trace.jobs):,} jobs, aws, delay {DELAY:g} s\n")
    print(HEADER)
    results = []
    for load in (float(text) for text in args.loads.split(",")):
        result = measure(config, trace, load, args.sample, args.true_durations)
        results.append(result)
        print(row(result), flush=True)
    print()
    ok = True
    for result in results:
        if result.outcomes:
            ok &= check(result)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
