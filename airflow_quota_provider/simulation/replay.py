"""A trace replayed under a quota config and a policy: the run, its metrics and its JSON."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_quota_provider.core.model import QueueConfig
from airflow_quota_provider.simulation.metrics import Meter, replay_metrics
from airflow_quota_provider.simulation.output import to_json
from airflow_quota_provider.simulation.policies import Extensions, Policy, policy_config
from airflow_quota_provider.simulation.scenario import Scenario
from airflow_quota_provider.simulation.simulator import Result, Simulator
from airflow_quota_provider.simulation.traces import Trace, refusal_summary


@dataclass(frozen=True)
class ReplaySettings:
    """How to replay: the policy, the load factor and the replay's own settings.

    :param checkpoint_interval: seconds between checkpoints of jobs that name none.
    :param preemption_delay: seconds a preempted job takes to stop.
    """

    policy: Policy = Policy.AWS
    load: float = 1.0
    checkpoint_interval: float | None = None
    preemption_delay: float = 0.0
    extensions: Extensions = field(default_factory=Extensions)

    def describe(self) -> str:
        text = f"{self.policy.value} at load {self.load:g}"
        if self.extensions.chosen:
            text += f" ({self.extensions.describe()})"
        return text


@dataclass
class Replay:
    settings: ReplaySettings
    trace: Trace
    result: Result
    meter: Meter
    wall_seconds: float

    @property
    def refused(self) -> dict[str, str]:
        """Jobs refused at submission: id -> ``CODE: message``."""
        return {
            job_id: f"{job.reason}: {job.message}"
            for job_id, job in self.result.jobs.items()
            if job.status == "REJECTED"
        }

    def summary(self) -> str:
        return refusal_summary(self.trace.source, len(self.trace.jobs), self.refused)

    def metrics(self) -> dict[str, Any]:
        return replay_metrics(self.result, self.meter, self.wall_seconds)

    def to_json(self) -> dict[str, Any]:
        """The scenario runner's shape (every job, the metrics) with the trace metrics,
        overall and per share, and what was replayed."""
        data = to_json(self.result)
        data["replay"] = {
            "trace": self.trace.source,
            "policy": self.settings.policy.value,
            "load": self.settings.load,
            "extensions": self.settings.extensions.describe() or None,
            "jobs_read": len(self.trace.jobs),
            "refused": len(self.refused),
            "summary": self.summary(),
        }
        data["metrics"] = {**data["metrics"], **self.metrics()}
        return data


def replay(
    config: QueueConfig,
    trace: Trace,
    settings: ReplaySettings,
    *,
    series: bool = False,
    on_progress: Callable[[float], None] | None = None,
    guarantees: QueueConfig | None = None,
) -> Replay:
    """Replay ``trace`` under ``config`` scheduled by ``settings.policy``.

    :param series: keep every share's usage after every instant (for plots).
    :param on_progress: called with the virtual time after every instant.
    :param guarantees: measure guarantee violation against this config's shares
        instead of ``config``'s (a proposal against what shares own today).
    """
    jobs = trace.at_load(settings.load).with_checkpoints(settings.checkpoint_interval)
    scheduled = policy_config(config, settings.policy, settings.extensions)
    scenario = Scenario(scheduled, jobs.jobs, (), settings.preemption_delay)
    meter = Meter(config, series=series, guarantees=guarantees)
    start = time.perf_counter()
    simulator = Simulator(scenario, record_timeline=False, on_progress=on_progress, observer=meter)
    result = simulator.run()
    wall = time.perf_counter() - start
    return Replay(settings, trace, result, meter, wall)
