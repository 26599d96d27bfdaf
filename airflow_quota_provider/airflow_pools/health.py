"""What ``status``, ``explain`` and the page say of the manager of a pools fleet.

Read from the fleet's heartbeat (:mod:`~airflow_quota_provider.airflow_pools.heartbeat`):
no manager ever, a manager that has not cycled for three of its heartbeats (its pools
stay as it last set them), a manager whose last cycle failed, one that refuses its file's
newer config, and a config file that differs from what the manager runs. In that last
case the readers show the fleet as the manager runs it, so no task vanishes from the view
because the file on the reader's side was edited first.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_quota_provider.airflow_pools.fleet import Fleet
from airflow_quota_provider.airflow_pools.heartbeat import STALE_AFTER_INTERVALS, Heartbeat
from airflow_quota_provider.config_file import config_of_text
from airflow_quota_provider.core.times import when
from airflow_quota_provider.exceptions import ConfigError


@dataclass(frozen=True)
class Health:
    """The fleet to show and what to say of its manager."""

    fleet: Fleet
    alerts: list[str]


def health(fleet: Fleet, beat: Heartbeat | None, now: float, file_digest: str | None) -> Health:
    """What to say of the manager of ``fleet`` (whose config file has ``file_digest``)."""
    name = fleet.config.job_queue
    if beat is None:
        return Health(
            fleet,
            [
                f"no pool manager has ever cycled fleet {name}: its pools are not managed "
                f"(start one: airflow-quota pool-manager --config FILE)"
            ],
        )
    alerts = []
    if beat.stale(now):
        last = beat.cycled_at if beat.cycled_at is not None else beat.written_at
        alerts.append(
            f"no pool manager has cycled fleet {name} since {_when(last)} (more than "
            f"{STALE_AFTER_INTERVALS} of its {beat.period:g} s heartbeats): its pools stay as "
            f"it last set them; last seen: {beat.describe(now)}"
        )
    elif beat.error:
        alerts.append(
            f"the pool manager's cycles fail since {_when(beat.error_at or now)}: {beat.error}"
        )
    if beat.config_refused:
        alerts.append(
            f"the pool manager refused its config file's newer text and runs the older one "
            f"({beat.config_digest}): {beat.config_refused}"
        )
    shown = fleet
    if file_digest is not None and beat.config_text and file_digest != beat.config_digest:
        try:
            shown = Fleet.of(config_of_text(beat.config_text, beat.config_path or "config.yaml"))
        except ConfigError:
            shown = fleet
        else:
            if beat.config_refused:
                return Health(shown, alerts)
            alerts.append(
                f"the config file differs from the one the pool manager runs ({beat.config_digest},"
                f" {beat.config_path}): shown as the manager runs it; it takes the file's at its "
                "next cycle if it validates"
            )
    return Health(shown, alerts)


def _when(seconds: float) -> str:
    return when(round(seconds * 1000))
