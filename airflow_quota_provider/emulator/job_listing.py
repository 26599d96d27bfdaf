"""ListServiceJobs: a queue's jobs by status or by one filter, newest first, paged.

As documented: without filters only ``jobStatus`` jobs are listed (RUNNING if
absent); a filter ignores ``jobStatus`` except SHARE_IDENTIFIER and
QUOTA_SHARE_NAME, which combine with it (and list every status without it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from airflow_quota_provider.emulator.batch_checks import found
from airflow_quota_provider.emulator.errors import BatchClientError
from airflow_quota_provider.emulator.pagination import check_limit, page
from airflow_quota_provider.emulator.registry import Handler, Params, Response
from airflow_quota_provider.emulator.service_jobs import summary
from airflow_quota_provider.emulator.service_model import BATCH
from airflow_quota_provider.emulator.store import ServiceJob

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World

Match = Callable[[ServiceJob], bool]
_SHARE_FILTERS = ("SHARE_IDENTIFIER", "QUOTA_SHARE_NAME")


def list_jobs(world: World, params: Params) -> Response:
    if "jobQueue" not in params:
        raise BatchClientError("jobQueue is required")
    queue = found(world.store.queue(params["jobQueue"]), "job queue", params["jobQueue"])
    match = _matcher(params)
    jobs = [job for job in world.store.jobs_of(queue.arn) if match(job)]
    jobs.sort(key=lambda job: (job.created_at, job.sequence), reverse=True)
    limit = check_limit(params.get("maxResults"), 100, BATCH)
    chosen, token = page(
        jobs,
        lambda job: (job.created_at, job.sequence),
        limit=limit,
        token=params.get("nextToken"),
        service=BATCH,
        descending=True,
    )
    return {"jobSummaryList": [summary(world, job) for job in chosen], "nextToken": token}


def _matcher(params: Params) -> Match:
    filters = params.get("filters") or []
    status = params.get("jobStatus")
    if len(filters) > 1:
        raise BatchClientError("only one filter can be used at a time")
    if not filters:
        wanted = status or "RUNNING"
        return lambda job: job.status == wanted
    name = filters[0].get("name")
    values = filters[0].get("values") or []
    if len(values) != 1:
        raise BatchClientError(f"filter {name} takes exactly one value, got {len(values)}")
    value = values[0]
    if name in _SHARE_FILTERS:
        by_status: Match = (lambda job: job.status == status) if status else (lambda job: True)
        if name == "QUOTA_SHARE_NAME":
            return lambda job: job.share == value and by_status(job)
        return lambda job: job.share_identifier == value and by_status(job)
    if name == "JOB_NAME":
        return _name_matcher(value)
    if name in ("BEFORE_CREATED_AT", "AFTER_CREATED_AT"):
        return _time_matcher(name, value)
    known = "JOB_NAME, BEFORE_CREATED_AT, AFTER_CREATED_AT, SHARE_IDENTIFIER, QUOTA_SHARE_NAME"
    raise BatchClientError(f"unknown filter {name}; the filters are {known}")


def _name_matcher(value: str) -> Match:
    wanted = value.lower()
    if wanted.endswith("*"):
        prefix = wanted[:-1]
        return lambda job: job.name.lower().startswith(prefix)
    return lambda job: job.name.lower() == wanted


def _time_matcher(name: str, value: str) -> Match:
    try:
        millis = int(value)
    except ValueError:
        raise BatchClientError(
            f"filter {name} takes milliseconds since the epoch, got {value!r}"
        ) from None
    if name == "BEFORE_CREATED_AT":
        return lambda job: job.created_at < millis
    return lambda job: job.created_at > millis


HANDLERS: dict[str, Handler] = {"ListServiceJobs": list_jobs}
