"""Batch's TagResource, UntagResource and ListTagsForResource, for every Batch resource here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_quota_provider.emulator.errors import BatchClientError
from airflow_quota_provider.emulator.registry import Handler, Params, Response

if TYPE_CHECKING:
    from airflow_quota_provider.emulator.world import World

MAX_TAGS = 50


def _tags_of(world: World, arn: str) -> dict[str, str]:
    store = world.store
    records = (store.environments, store.policies, store.queues, store.shares)
    for table in records:
        record = table.get(arn)
        if record is not None:
            return record.tags
    job = next((j for j in store.jobs.values() if j.arn == arn), None)
    if job is not None:
        return job.tags
    raise BatchClientError(f"resource {arn} does not exist")


def tag(world: World, params: Params) -> Response:
    tags = _tags_of(world, params["resourceArn"])
    merged = {**tags, **params["tags"]}
    if len(merged) > MAX_TAGS:
        raise BatchClientError(f"a resource may have at most {MAX_TAGS} tags")
    tags.update(params["tags"])
    return {}


def untag(world: World, params: Params) -> Response:
    tags = _tags_of(world, params["resourceArn"])
    for key in params["tagKeys"]:
        tags.pop(key, None)
    return {}


def list_tags(world: World, params: Params) -> Response:
    return {"tags": dict(_tags_of(world, params["resourceArn"]))}


HANDLERS: dict[str, Handler] = {
    "TagResource": tag,
    "UntagResource": untag,
    "ListTagsForResource": list_tags,
}
